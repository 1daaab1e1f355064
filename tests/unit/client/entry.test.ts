// The client package stays loadable by itself (browsers, other repositories): its modules import
// only each other and openapi-fetch at runtime, never the service (client/generate.ts, the dev
// tool that loads the service to make openapi.ts, is not part of the package), and its entry
// exports the curated API.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as entry from '../../../client/index.ts';

const CLIENT_DIR = fileURLToPath(new URL('../../../client/', import.meta.url));

describe('client entry', () => {
  it('exports exactly the curated API', () => {
    expect(Object.keys(entry).sort()).toEqual([
      'AgentFiles',
      'Agents',
      'DshAgent',
      'DshClient',
      'DshError',
      'DshToolError',
      'TERMINAL_PROTOCOL',
      'createSseParser',
      'isDshError',
      'readSse',
      'textOf',
    ]);
  });

  it('has only relative runtime imports and openapi-fetch, and its package says so', () => {
    const files = readdirSync(CLIENT_DIR).filter((f) => f.endsWith('.ts') && f !== 'generate.ts');
    expect(files).toContain('index.ts');
    for (const file of files) {
      const source = readFileSync(`${CLIENT_DIR}${file}`, 'utf8');
      for (const match of source.matchAll(/^(?:import|export)\s+(type\s+)?[^'";]*from\s+'([^']+)'/gm)) {
        const [, typeOnly, specifier = ''] = match;
        if (typeOnly !== undefined) continue;
        expect(specifier, `${file} imports ${specifier}`).toMatch(/^(\.\/[\w-]+\.ts|openapi-fetch)$/);
      }
    }
    const pkg = JSON.parse(readFileSync(`${CLIENT_DIR}package.json`, 'utf8'));
    const root = JSON.parse(readFileSync(`${CLIENT_DIR}../package.json`, 'utf8'));
    expect(pkg.dependencies).toEqual({ 'openapi-fetch': root.devDependencies['openapi-fetch'] });
    expect(pkg.exports['.']).toBe('./index.ts');
  });
});
