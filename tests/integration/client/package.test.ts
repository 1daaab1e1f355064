// The client as people install it: `npm pack` in client/ (its prepack builds dist/), the tarball
// installed offline into an empty project (so it has no runtime dependency to fetch), then, against
// a service started here: a plain JavaScript ES module and a CommonJS script using it under this
// Node and under an older one on the machine (Node 20-23, when there is one), the README's Client
// example run from the installed package, and a strict `tsc` (strict, exactOptionalPropertyTypes,
// noUncheckedIndexedAccess, no skipLibCheck, no allowImportingTsExtensions) over a TypeScript
// user's files and both READMEs' examples, once as a Node project (nodenext, ESM and CommonJS) and
// once as a browser bundle's; and the ES module it ships, unbundled, in Debian's Chromium.
import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DshClient } from '../../../client/index.ts';
import type { Running } from '../../../host/serve.ts';
import { served } from '../api/served.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const service = served('client-package');
const dir = mkdtempSync(join(tmpdir(), 'dsh-client-package-'));
const project = join(dir, 'project');
// npm and the package's prepack run on this Node, whatever `node` the PATH has first.
const env = {
  ...process.env,
  PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`,
  npm_config_cache: join(dir, 'npm-cache'),
  npm_config_update_notifier: 'false',
};
let server: Running;
let key: string;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** An older Node on the machine (major 20 to 23), to run the built package under; undefined when none. */
async function olderNode(): Promise<string | undefined> {
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node']) {
    if (!existsSync(candidate)) continue;
    const { stdout } = await run(candidate, ['-p', 'process.versions.node.split(".")[0]']).catch(() => ({
      stdout: '0',
    }));
    const major = Number(stdout.trim());
    if (major >= 20 && major < 24) return candidate;
  }
  return undefined;
}

/** The README's Client example (its first ```ts block). */
function readmeExample(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('\n## Client\n'));
  const block = /```ts\n([\s\S]*?)```/.exec(section.slice(0, section.indexOf('\n## ', 1)));
  if (!block?.[1]) throw new Error('README.md has no ```ts block in its Client section');
  return block[1];
}

/** client/README.md's example (the first ```ts block of its "## Use" section). */
function packageReadmeExample(): string {
  const readme = readFileSync(join(ROOT, 'client', 'README.md'), 'utf8');
  const block = /```ts\n([\s\S]*?)```/.exec(readme.slice(readme.indexOf('\n## Use\n')));
  if (!block?.[1]) throw new Error('client/README.md has no ```ts block in its Use section');
  return block[1];
}

const ESM_SCRIPT = `import { DshClient, DshError, isDshError, textOf } from '@dsh-sandbox/client';
const client = new DshClient({ baseUrl: process.env.DSH_URL, apiKey: process.env.DSH_KEY });
const agent = await client.agents.create({ preset: 'standard', mode: 'both' });
await agent.files.write('note.txt', 'packed');
const read = await agent.call('read', { file_path: 'note.txt' });
const code = await agent.call('run_code', { code: 'console.log("hi"); return 6 * 7;', description: 'log and answer' });
const controller = new AbortController();
let events = 0;
for await (const event of agent.events({ signal: controller.signal })) {
  events++;
  if (event.type === 'tool.result') controller.abort();
}
let missing;
try { await client.agents.get('agt_none'); } catch (error) { missing = isDshError(error, 'NOT_FOUND') && error instanceof DshError; }
await agent.delete();
console.log(JSON.stringify({ read: textOf(read), code: code.value, events, missing, left: (await client.agents.list()).length }));
`;

/** A page on the service's origin importing the shipped module as it is; its outcome in window.outcome. */
const BROWSER_PAGE = `<!doctype html><title>client</title><script type="module">
import { DshClient } from './index.js';
try {
  const client = new DshClient({ baseUrl: location.origin, apiKey: location.hash.slice(1) });
  const agent = await client.agents.create({ preset: 'standard' });
  await agent.files.write('b.txt', 'from a browser');
  const text = await agent.files.readText('b.txt');
  const controller = new AbortController();
  let events = 0;
  for await (const event of agent.events({ signal: controller.signal })) {
    events++;
    controller.abort();
  }
  await agent.delete();
  window.outcome = { text, events };
} catch (error) {
  window.outcome = { error: String(error) };
}
</script>`;

const CJS_SCRIPT = `const { DshClient, TERMINAL_PROTOCOL } = require('@dsh-sandbox/client');
const client = new DshClient({ baseUrl: process.env.DSH_URL, apiKey: process.env.DSH_KEY });
client.agents.list().then((agents) => console.log(JSON.stringify({ agents: agents.length, protocol: TERMINAL_PROTOCOL })));
`;

/** A TypeScript user's own code, for tsc only (typed results, narrowed errors and request kinds). */
const TS_USER = `import { DshClient, isDshError, type RunCodeValue, type ToolResult } from '@dsh-sandbox/client';
import type { paths } from '@dsh-sandbox/client/openapi';
const client = new DshClient({ baseUrl: 'http://127.0.0.1:7070', apiKey: 'key' });
export async function main(signal?: AbortSignal): Promise<string> {
  const agent = await client.agents.create({ preset: 'standard', mode: 'code' });
  const result = await agent.call('run_code', { code: 'return 1', description: 'one' }, signal ? { signal } : {});
  const value: RunCodeValue | undefined = result.value;
  const logs: string[] = value?.logs ?? [];
  const any: ToolResult = result;
  agent.onRequest('approval', ({ payload }) => ({ allow: payload.toolName !== 'bash' }));
  const route: keyof paths = '/v1/agents';
  try { await client.agents.get('agt_x'); } catch (error) { if (isDshError(error, 'NOT_FOUND')) return String(error.status); }
  return route + logs.join('') + any.name;
}
`;

const TS_CJS_USER = `import dsh = require('@dsh-sandbox/client');
export const client = new dsh.DshClient({ baseUrl: 'http://127.0.0.1:7070', apiKey: 'key' });
`;

const STRICT = {
  strict: true,
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
  skipLibCheck: false,
  noEmit: true,
  typeRoots: [join(ROOT, 'node_modules', '@types')],
};

beforeAll(async () => {
  server = await service.start();
  key = (await server.store.tenants.createTenant('package')).apiKey;
  await run('npm', ['pack', '--pack-destination', dir], { cwd: join(ROOT, 'client'), env });
  const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'));
  if (tarball === undefined) throw new Error(`npm pack left no tarball in ${dir}`);
  mkdirSync(project);
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'user', private: true, type: 'module' }),
  );
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', join(dir, tarball)], {
    cwd: project,
    env,
  });
}, 300_000);

describe('the packed client', () => {
  it('installs offline with no dependencies and ships built JavaScript and declarations only', () => {
    const installed = join(project, 'node_modules', '@dsh-sandbox', 'client');
    const pkg = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
    expect(pkg.dependencies ?? {}).toEqual({});
    expect(pkg.version).toBe(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version);
    const files = readdirSync(join(installed, 'dist'));
    expect(files).toEqual(expect.arrayContaining(['index.js', 'index.cjs', 'index.d.ts', 'index.d.cts']));
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.endsWith('.d.cts'))).toEqual(
      [],
    );
    // Bundled and neutral: nothing imported at runtime, no Node built-in, so browsers take it too.
    const bundle = readFileSync(join(installed, 'dist', 'index.js'), 'utf8');
    expect(bundle).not.toMatch(/^\s*import\s|\brequire\(|from ["']node:/m);
  });

  it('runs a JavaScript module and a CommonJS script against the service, on this Node and an older one', async () => {
    writeFileSync(join(project, 'user.mjs'), ESM_SCRIPT);
    writeFileSync(join(project, 'user.cjs'), CJS_SCRIPT);
    const nodes = [process.execPath, ...[await olderNode()].filter((n) => n !== undefined)];
    for (const node of nodes) {
      const userEnv = { ...process.env, DSH_URL: server.url, DSH_KEY: key };
      const esm = await run(node, ['user.mjs'], { cwd: project, env: userEnv, timeout: 120_000 });
      expect(JSON.parse(esm.stdout), node).toEqual({
        read: expect.stringContaining('packed'),
        code: { logs: ['hi'], value: 42 },
        events: expect.any(Number),
        missing: true,
        left: 0,
      });
      const cjs = await run(node, ['user.cjs'], { cwd: project, env: userEnv });
      expect(JSON.parse(cjs.stdout), node).toEqual({ agents: 0, protocol: 'dsh.terminal.v1' });
    }
  });

  it("runs the README's Client example from the installed package", async () => {
    writeFileSync(join(project, 'readme.mts'), readmeExample());
    const { stdout } = await run(process.execPath, ['readme.mts'], {
      cwd: project,
      env: { ...process.env, DSH_URL: server.url, DSH_KEY: key },
      timeout: 120_000,
    });
    expect(stdout).toContain('hello from the sandbox');
    expect(await new DshClient({ baseUrl: server.url, apiKey: key }).agents.list()).toEqual([]);
  });

  it('runs in a browser as the ES module it ships, unbundled', async () => {
    const executablePath = inject('chromium');
    if (executablePath.startsWith('error: ')) throw new Error(executablePath.slice(7));
    const bundle = readFileSync(
      join(project, 'node_modules', '@dsh-sandbox', 'client', 'dist', 'index.js'),
      'utf8',
    );
    // --no-sandbox: the tests run as root in a container, where Chromium's own sandbox cannot start.
    const browser = await chromium.launch({ executablePath, headless: true, args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage();
      // The page and the module come from the service's origin (intercepted), so its calls are same-origin.
      await page.route(`${server.url}/__client/**`, (route) =>
        route.fulfill(
          route.request().url().endsWith('/index.js')
            ? { contentType: 'text/javascript', body: bundle }
            : { contentType: 'text/html', body: BROWSER_PAGE },
        ),
      );
      await page.goto(`${server.url}/__client/#${key}`);
      const outcome = await (
        await page.waitForFunction(() => (globalThis as { outcome?: unknown }).outcome)
      ).jsonValue();
      expect(outcome).toEqual({ text: 'from a browser', events: 1 });
    } finally {
      await browser.close();
    }
  });

  it("passes a strict tsc as a Node project's and as a browser bundle's dependency", async () => {
    writeFileSync(join(project, 'user.ts'), TS_USER);
    writeFileSync(join(project, 'legacy.cts'), TS_CJS_USER);
    writeFileSync(join(project, 'readme.ts'), readmeExample());
    writeFileSync(join(project, 'package-readme.ts'), packageReadmeExample());
    const node = {
      compilerOptions: { ...STRICT, target: 'es2022', lib: ['es2022'], module: 'nodenext', types: ['node'] },
      files: ['user.ts', 'legacy.cts', 'readme.ts', 'package-readme.ts'],
    };
    const browser = {
      compilerOptions: {
        ...STRICT,
        target: 'es2022',
        lib: ['es2022', 'dom', 'dom.iterable', 'dom.asynciterable'],
        module: 'esnext',
        moduleResolution: 'bundler',
        types: [],
      },
      files: ['user.ts'],
    };
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(node));
    writeFileSync(join(project, 'tsconfig.browser.json'), JSON.stringify(browser));
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    for (const config of ['tsconfig.json', 'tsconfig.browser.json']) {
      const checked = await run(process.execPath, [tsc, '-p', config], { cwd: project }).catch(
        (error: { stdout?: string }) => ({ stdout: `FAILED\n${error.stdout ?? String(error)}` }),
      );
      expect(checked.stdout, config).toBe('');
    }
  });
});
