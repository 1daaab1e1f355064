// The Python client as people install it and use it: client-py/ installed with pip (offline, no
// build isolation, into a folder of its own, from a copy so the checkout gets no build files), then,
// against a service started here, the package's unittest suites (sync and async clients: agents,
// batches with progress and idempotent retries, files, exec, events resumed after a cut, approvals,
// terminals, errors) and its README's example, each line it promises in a comment printed in order;
// and mypy over the installed package and the example, as a user's type checker would see them.
// The Python comes from scripts/setup/python.ts (inject('python')): Debian's python3-httpx and
// python3-websockets, installed by the integration setup when missing.
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { DshClient } from '../../../client/index.ts';
import type { Running } from '../../../host/serve.ts';
import { served } from '../api/served.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const service = served('client-py');
const dir = mkdtempSync(join(tmpdir(), 'dsh-client-py-'));
const site = join(dir, 'site');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The ```python block of client-py/README.md. */
const readmeExample = (): string => {
  const readme = readFileSync(join(ROOT, 'client-py', 'README.md'), 'utf8');
  const code = /```python\n([\s\S]*?)```/.exec(readme)?.[1];
  if (code === undefined) throw new Error('client-py/README.md has no ```python block');
  return code;
};

let python: string;
let server: Running;
let key: string;
/** The environment of a Python run: the installed package only, no bytecode written into the checkout. */
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  python = inject('python');
  if (python.startsWith('error:')) throw new Error(`no Python for the Python client: ${python}`);
  const source = join(dir, 'source');
  cpSync(join(ROOT, 'client-py'), source, {
    recursive: true,
    filter: (path) => !/(__pycache__|\.egg-info|\/build)$/.test(path),
  });
  await run(
    python,
    [
      '-m',
      'pip',
      'install',
      '--quiet',
      '--no-deps',
      '--no-build-isolation',
      '--no-index',
      '--target',
      site,
      source,
    ],
    { timeout: 120_000 },
  );
  server = await service.start();
  key = (await server.store.tenants.createTenant('python')).apiKey;
  env = { ...process.env, PYTHONPATH: site, PYTHONDONTWRITEBYTECODE: '1', DSH_URL: server.url, DSH_KEY: key };
});

it('pip installs the package with its generated types and its type marker', () => {
  for (const file of ['__init__.py', 'openapi.py', 'types.py', 'py.typed'])
    expect(existsSync(join(site, 'dsh_sandbox', file)), file).toBe(true);
});

it('mypy finds no error in the installed package nor in code written against it', async () => {
  const example = join(site, 'readme_example.py');
  writeFileSync(example, readmeExample());
  const { stdout } = await run(
    python,
    ['-m', 'mypy', '--no-incremental', '--cache-dir', join(dir, 'mypy-cache'), 'dsh_sandbox', example],
    { cwd: site, env, timeout: 240_000 },
  ).catch((error: { stdout?: string; stderr?: string }) => {
    throw new Error(`mypy failed:\n${error.stdout ?? ''}${error.stderr ?? ''}`);
  });
  expect(stdout).toMatch(/^Success: no issues found/m);
}, 250_000);

it("the package's unittest suites pass against the service, none skipped", async () => {
  const { stderr } = await run(
    python,
    ['-m', 'unittest', 'discover', '-v', '-s', join(ROOT, 'client-py', 'tests')],
    {
      cwd: dir,
      env,
      timeout: 300_000,
    },
  ).catch((error: { stdout?: string; stderr?: string }) => {
    throw new Error(`python unittest failed:\n${error.stderr ?? ''}${error.stdout ?? ''}`);
  });
  const ran = /^Ran (\d+) tests? in/m.exec(stderr);
  expect(Number(ran?.[1]), stderr).toBeGreaterThanOrEqual(20);
  expect(stderr).toMatch(/^OK$/m);
  expect(stderr).not.toMatch(/skipped/);
  // Every test cleaned up after itself.
  expect(await new DshClient({ baseUrl: server.url, apiKey: key }).agents.list()).toEqual([]);
}, 320_000);

it("the README's example runs against the service and prints what its comments say", async () => {
  const code = readmeExample();
  const file = join(dir, 'example.py');
  writeFileSync(file, code);
  const { stdout } = await run(python, [file], { cwd: dir, env, timeout: 180_000 });
  // Each `print(…)  # text` of the example printed a line holding that text, in order.
  const promised = [...code.matchAll(/print\(.*# (.+)$/gm)].map((m) => m[1] as string);
  expect(promised.length).toBeGreaterThan(3);
  const lines = stdout.trim().split('\n');
  let at = 0;
  for (const text of promised) {
    const found = lines.findIndex((line, i) => i >= at && line.includes(text));
    expect(found, `a line with ${JSON.stringify(text)} in:\n${stdout}`).toBeGreaterThanOrEqual(0);
    at = found + 1;
  }
  expect(lines).toContainEqual(expect.stringMatching(/^\d+ tool\.result$/));
  expect(await new DshClient({ baseUrl: server.url, apiKey: key }).agents.list()).toEqual([]);
}, 200_000);
