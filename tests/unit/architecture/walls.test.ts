// The walls ARCHITECTURE.md keeps, pinned: the control plane (host/) never imports scripts/ (setup
// may import host, never the reverse, so there is no cycle and one place builds the image), and
// only host/config.ts reads the environment (everything else gets its settings from a Config).
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const HOST = fileURLToPath(new URL('../../../host/', import.meta.url));

const hostFiles = (): { file: string; source: string }[] =>
  readdirSync(HOST, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => ({ file, source: readFileSync(`${HOST}${file}`, 'utf8') }));

describe('the walls of host/', () => {
  it('never imports scripts/ (statically or dynamically)', () => {
    const files = hostFiles();
    expect(files.length).toBeGreaterThan(50);
    for (const { file, source } of files) {
      const specifiers = [
        ...source.matchAll(/\bfrom\s+'([^']+)'/g),
        ...source.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g),
      ].map((m) => m[1] ?? '');
      for (const specifier of specifiers)
        expect(specifier, `host/${file} imports ${specifier}`).not.toMatch(/(^|\/)scripts\//);
    }
  });

  it('reads the environment only in host/config.ts', () => {
    for (const { file, source } of hostFiles()) {
      if (file === 'config.ts') continue;
      expect(/\bprocess\.env\b/.test(source), `host/${file} reads process.env`).toBe(false);
    }
  });
});
