// The README's Client example, run as a user would run it (a file of its own, Node 24's type
// stripping, `@dsh-sandbox/client` resolved to this checkout's package) against a service started
// here, so the example cannot rot: a change that breaks it fails this test.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { DshClient } from '../../../client/index.ts';
import { served } from '../api/served.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const service = served('client-readme');
const dir = mkdtempSync(join(tmpdir(), 'dsh-client-readme-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The first ```ts block of the README's "## Client" section. */
const example = (): string => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('\n## Client\n'));
  const block = /```ts\n([\s\S]*?)```/.exec(section.slice(0, section.indexOf('\n## ', 1)));
  if (!block?.[1]) throw new Error('README.md has no ```ts block in its Client section');
  return block[1];
};

it("the README's Client example runs against the service and prints what its comments say", async () => {
  const server = await service.start();
  const key = (await server.store.tenants.createTenant('readme')).apiKey;
  const code = example();
  expect(code).toContain("from '@dsh-sandbox/client'");
  const file = join(dir, 'example.mts');
  const entry = pathToFileURL(join(ROOT, 'client', 'index.ts')).href;
  writeFileSync(file, code.replaceAll("'@dsh-sandbox/client'", JSON.stringify(entry)));

  const { stdout } = await promisify(execFile)(process.execPath, ['--no-node-snapshot', file], {
    env: { ...process.env, DSH_URL: server.url, DSH_KEY: key },
    timeout: 120_000,
  });
  // Each `console.log(…); // text` of the example printed a line holding that text, in order.
  const promised = [...code.matchAll(/console\.log\(.*\/\/ (.+)$/gm)].map((m) => m[1] as string);
  expect(promised.length).toBeGreaterThan(1);
  const lines = stdout.trim().split('\n');
  let at = 0;
  for (const text of promised) {
    const found = lines.findIndex((line, i) => i >= at && line.includes(text));
    expect(found, `a line with ${JSON.stringify(text)} in:\n${stdout}`).toBeGreaterThanOrEqual(0);
    at = found + 1;
  }
  expect(lines).toContainEqual(expect.stringMatching(/^\d+ tool\.result$/));
  // The example cleaned up after itself.
  expect(await new DshClient({ baseUrl: server.url, apiKey: key }).agents.list()).toEqual([]);
});
