// sdk-gen stays loadable by itself: its modules import only each other (no isolated-vm,
// dockerode, host code or packages), apart from type-only imports.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as entry from '../../../sdk-gen/index.ts';

const SDK_GEN_DIR = fileURLToPath(new URL('../../../sdk-gen/', import.meta.url));

describe('sdk-gen entry', () => {
  it('exports exactly the curated API', () => {
    expect(Object.keys(entry).sort()).toEqual([
      'SDK_BANNER',
      'bindToolNames',
      'generateSdk',
      'runCodeDescription',
      'toIdentifier',
    ]);
  });

  it('has only relative runtime imports inside sdk-gen', () => {
    const files = readdirSync(SDK_GEN_DIR, { recursive: true, encoding: 'utf8' }).filter(
      (file) => file.endsWith('.ts') && !file.endsWith('.test.ts'),
    );
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const source = readFileSync(`${SDK_GEN_DIR}${file}`, 'utf8');
      for (const match of source.matchAll(/^(?:import|export)\s+(type\s+)?[^'";]*from\s+'([^']+)'/gm)) {
        const [, typeOnly, specifier = ''] = match;
        if (typeOnly !== undefined) continue;
        expect(specifier, `${file} imports ${specifier}`).toMatch(/^\.\/[\w-]+\.ts$/);
      }
    }
  });
});
