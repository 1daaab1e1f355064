// What a warm start does not import (issue 33, warm start): the packages no first request needs
// load at their first use, so host/serve.ts's module graph (which every `npm start` imports before
// it answers /v1/health) must not reach them. A child Node imports serve.ts with a resolve hook
// that records every module, as the service would; the lazy boundaries themselves are tested where
// they are (the MCP route, the runners, lazyRequire).
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const SERVE = fileURLToPath(new URL('../../../host/serve.ts', import.meta.url));

/** Packages loaded at their first use (the module that loads each one says where). */
const LAZY = [
  '@modelcontextprotocol/client', // mcp-servers/runner-start.ts, a runner's start
  '@modelcontextprotocol/server', // api/routes/mcp.ts, the first MCP request
  'zod', // behind both MCP SDKs
  'yaml', // skills/package.ts, the first skill package read
  'vscode-jsonrpc', // tools/builtin/lsp/rpc.ts, the first language server
  'esbuild', // isolates/compile.ts, the first program compiled
];

const HOOK = `
import { registerHooks } from 'node:module';
globalThis.loaded = [];
registerHooks({ resolve(spec, ctx, next) { const r = next(spec, ctx); globalThis.loaded.push(r.url); return r; } });
`;

it('importing host/serve.ts loads none of the packages no first request needs', async () => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      '--no-node-snapshot',
      '--import',
      `data:text/javascript,${encodeURIComponent(HOOK)}`,
      '--input-type=module',
      '-e',
      `await import(${JSON.stringify(SERVE)}); process.stdout.write(JSON.stringify(globalThis.loaded));`,
    ],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  const loaded = JSON.parse(stdout) as string[];
  expect(loaded.some((url) => url.endsWith('/host/serve.ts'))).toBe(true);
  const packages = new Set(
    loaded.flatMap((url) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1] ?? []),
  );
  expect(LAZY.filter((name) => packages.has(name))).toEqual([]);
}, 60_000);
