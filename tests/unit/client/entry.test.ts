// The client package stays loadable by itself (browsers, other repositories): its modules import
// only each other and openapi-fetch at runtime, never the service (client/generate.ts, the dev
// tool that loads the service to make openapi.ts, and client/build.ts are not part of the
// package), and its entry exports the curated API. The package is published built (dist/, made by
// build.ts on `npm pack`), with openapi-fetch bundled in, at the service's own version;
// tests/integration/client/package.test.ts installs and uses the packed tarball.
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
      'Snapshots',
      'TERMINAL_PROTOCOL',
      'createSseParser',
      'isDshError',
      'readSse',
      'textOf',
    ]);
  });

  it('has only relative runtime imports and openapi-fetch', () => {
    const files = readdirSync(CLIENT_DIR).filter(
      (f) => f.endsWith('.ts') && f !== 'generate.ts' && f !== 'build.ts',
    );
    expect(files).toContain('index.ts');
    for (const file of files) {
      const source = readFileSync(`${CLIENT_DIR}${file}`, 'utf8');
      for (const match of source.matchAll(/^(?:import|export)\s+(type\s+)?[^'";]*from\s+'([^']+)'/gm)) {
        const [, typeOnly, specifier = ''] = match;
        if (typeOnly !== undefined) continue;
        expect(specifier, `${file} imports ${specifier}`).toMatch(/^(\.\/[\w-]+\.ts|openapi-fetch)$/);
      }
    }
  });

  it('is published built, with no runtime dependency (openapi-fetch is bundled in), at the service version', () => {
    const pkg = JSON.parse(readFileSync(`${CLIENT_DIR}package.json`, 'utf8'));
    const root = JSON.parse(readFileSync(`${CLIENT_DIR}../package.json`, 'utf8'));
    expect(pkg.private).toBeUndefined();
    expect(pkg.dependencies).toBeUndefined();
    expect(root.devDependencies['openapi-fetch']).toBeDefined();
    expect(pkg.version).toBe(root.version);
    // The version the service reports (host/serve.ts VERSION, /v1/health, dsh_build_info).
    const serve = readFileSync(`${CLIENT_DIR}../host/serve.ts`, 'utf8');
    expect(serve).toContain(`export const VERSION = '${pkg.version}';`);
    expect(pkg.exports['.']).toEqual({
      import: { types: './dist/index.d.ts', default: './dist/index.js' },
      require: { types: './dist/index.d.cts', default: './dist/index.cjs' },
    });
    expect(pkg.scripts.prepack).toBe('node build.ts');
    expect(pkg.files).toEqual(['dist', 'README.md']);
  });
});
