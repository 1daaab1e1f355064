// Checkpoints and the calls around them, over real HTTP with real containers (issue 36): a
// rollback asked while a call batch of the agent runs (a long bash) is refused with 409
// ROLLBACK_BUSY and changes nothing, and goes through once the batch ended; the `skill` loader's
// copy into `.skills/<name>/` is a tracked call, so a rollback across a load puts back the files
// it replaced and removes the ones it added, byte-exact, and refuses (ROLLBACK_UNSAFE) where bash
// changed a loaded file since.
import { Readable } from 'node:stream';
import { pack } from 'tar-stream';
import { expect, it } from 'vitest';
import type { Running } from '../../../host/serve.ts';
import { until } from '../../helpers/until.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { json, served } from './served.ts';

const service = served('checkpoints-calls', { shutdownGraceMs: 300 });

let n = 0;
/** One call; its id and result. */
async function call(server: Running, key: string, id: string, name: string, args: Loose) {
  const callId = `k${++n}`;
  const res = await json(server, key, 'POST', `/v1/agents/${id}/calls`, {
    calls: [{ id: callId, name, arguments: args }],
  });
  expect(res.status, JSON.stringify(res.json)).toBe(200);
  return { callId, result: res.json.results[0] as Loose };
}

const sh = async (server: Running, key: string, id: string, command: string): Promise<string> => {
  const { result } = await call(server, key, id, 'bash', { command, description: 'look' });
  expect(result.ok, JSON.stringify(result.error)).toBe(true);
  return result.value.stdout;
};

/** Every file of the workspace with its sha256 and mode, as the sandbox sees it. */
const tree = (server: Running, key: string, id: string): Promise<string> =>
  sh(server, key, id, "find . -path ./.dsh -prune -o -type f -printf '%p %m ' -exec sha256sum {} \\; | sort");

const rollback = (server: Running, key: string, id: string, callId: string) =>
  json(server, key, 'POST', `/v1/agents/${id}/rollback`, { callId });

it('refuses a rollback while a call of the agent runs (ROLLBACK_BUSY), and rolls back once it ended', async () => {
  const server = await service.current();
  const key = (await server.store.tenants.createTenant('busy')).apiKey;
  const id = (await json(server, key, 'POST', '/v1/agents', {})).json.id as string;
  const w = await call(server, key, id, 'write', { file_path: 'a.txt', content: 'one' });
  await call(server, key, id, 'edit', { file_path: 'a.txt', old_string: 'one', new_string: 'two' });
  const before = await tree(server, key, id);

  // A long bash: it runs until the test lets it end (no fixed sleep).
  const long = call(server, key, id, 'bash', {
    command: 'touch started; while [ ! -e stop ]; do sleep 0.05; done; rm stop started; echo ended',
    description: 'wait for the test',
  });
  await until(
    async () => (await json(server, key, 'GET', `/v1/agents/${id}/usage`)).json.state?.batches === 1,
    { what: 'the long bash running', timeoutMs: 60_000 },
  );
  const refused = await rollback(server, key, id, w.callId);
  expect(refused.status).toBe(409);
  expect(refused.json.error).toMatchObject({
    code: 'ROLLBACK_BUSY',
    message: expect.stringMatching(/running/),
    data: { agentId: id, running: 1 },
  });
  // Nothing was restored, and the checkpoints are all still there.
  const read = await fetch(`${server.url}/v1/agents/${id}/files?path=a.txt`, {
    headers: { Authorization: `Bearer ${key}` },
  });
  expect(await read.text()).toBe('two');
  const listed = (await json(server, key, 'GET', `/v1/agents/${id}/checkpoints`)).json.checkpoints as Loose[];
  expect(listed.map((c) => c.tool)).toEqual(['write', 'edit']);

  // The client lets the call end (a file through the files route: not a call batch), then asks again.
  const stop = await fetch(`${server.url}/v1/agents/${id}/files?path=stop`, {
    method: 'PUT',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/octet-stream' },
    body: '',
  });
  expect(stop.status).toBe(200);
  expect((await long).result.value.stdout).toBe('ended\n');
  const back = await rollback(server, key, id, w.callId);
  expect(back.status, JSON.stringify(back.json)).toBe(200);
  expect(back.json.removed).toEqual(['/workspace/a.txt']);
  expect(await tree(server, key, id)).not.toBe(before);
  expect(await tree(server, key, id)).not.toContain('a.txt');
});

const skillTar = async (files: Record<string, string>): Promise<Uint8Array> => {
  const p = pack();
  for (const [name, body] of Object.entries(files)) p.entry({ name }, body);
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of Readable.from(p)) chunks.push(chunk as Buffer);
  return new Uint8Array(Buffer.concat(chunks));
};

const SKILL_MD = (text: string) => `---\nname: lint\ndescription: "Lint the code."\n---\n# Lint\n\n${text}\n`;

it('rolls back across a skill load: the files it replaced come back, the ones it added go, byte-exact', async () => {
  const server = await service.current();
  const key = (await server.store.tenants.createTenant('skills')).apiKey;
  const putSkill = async (files: Record<string, string>) => {
    const res = await fetch(`${server.url}/v1/skills/lint`, {
      method: 'PUT',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/x-tar' },
      body: await skillTar(files),
    });
    expect(res.status).toBeLessThan(300);
  };
  await putSkill({
    'SKILL.md': SKILL_MD('Run the linter.'),
    'rules.md': 'No tabs.\n',
    'old/deep.md': 'v1\n',
  });
  const id = (await json(server, key, 'POST', '/v1/agents', { preset: 'standard' })).json.id as string;
  await call(server, key, id, 'write', { file_path: 'src/main.txt', content: 'main' });
  const empty = await tree(server, key, id);

  const first = await call(server, key, id, 'skill', { name: 'lint' });
  expect(first.result.ok, JSON.stringify(first.result.error)).toBe(true);
  const v1 = await tree(server, key, id);
  expect(v1).toContain('.skills/lint/old/deep.md');

  // A new version: one file changed, one gone, one new; loading it replaces the folder whole.
  await putSkill({ 'SKILL.md': SKILL_MD('Run the linter twice.'), 'extra.md': 'new\n' });
  const second = await call(server, key, id, 'skill', { name: 'lint' });
  expect(second.result.ok, JSON.stringify(second.result.error)).toBe(true);
  const listed = (await json(server, key, 'GET', `/v1/agents/${id}/checkpoints`)).json.checkpoints as Loose[];
  expect(listed.at(-1)).toMatchObject({ callId: second.callId, tool: 'skill' });
  expect(listed.at(-1).paths).toEqual(
    expect.arrayContaining(['/workspace/.skills/lint/rules.md', '/workspace/.skills/lint/extra.md']),
  );
  expect(await tree(server, key, id)).not.toContain('rules.md');

  const back = await rollback(server, key, id, second.callId);
  expect(back.status, JSON.stringify(back.json)).toBe(200);
  expect(back.json.removed).toEqual(['/workspace/.skills/lint/extra.md']);
  expect(await tree(server, key, id)).toBe(v1);

  // bash changed a loaded file since: refused, nothing written; undone by hand, the rollback goes.
  await sh(server, key, id, 'echo mine >> .skills/lint/rules.md');
  const changed = await tree(server, key, id);
  const refused = await rollback(server, key, id, first.callId);
  expect(refused.status).toBe(409);
  expect(refused.json.error).toMatchObject({
    code: 'ROLLBACK_UNSAFE',
    data: { path: '/workspace/.skills/lint/rules.md' },
  });
  expect(await tree(server, key, id)).toBe(changed);
  await sh(server, key, id, "printf 'No tabs.\\n' > .skills/lint/rules.md");
  expect((await rollback(server, key, id, first.callId)).status).toBe(200);
  expect(await tree(server, key, id)).toBe(empty);
});
