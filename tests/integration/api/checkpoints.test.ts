// Checkpoints and rollback over real HTTP with real containers (issue 36): a rollback across a
// sequence of writes, edits and an archive upload leaves the workspace byte-exact as it was just
// before the call named (every file hashed by the sandbox itself); a file bash changed after the
// last tracked call refuses it with ROLLBACK_UNSAFE and nothing changes; the tenant's bounds drop
// the oldest checkpoints (CHECKPOINT_DROPPED); the model's checkpoint and rollback tools appear only
// once the tenant turns them on and undo what the model wrote; another tenant's agent is unknown;
// checkpoints outlive a restart of the service and go with their agent; a tenant's agents together
// are held to its checkpointBytes quota (its oldest dropped), counted again after a restart.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { buffer } from 'node:stream/consumers';
import { pack } from 'tar-stream';
import { expect, it } from 'vitest';
import type { Running } from '../../../host/serve.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { json, served } from './served.ts';

const ADMIN = 'admin-key-for-the-checkpoints-test-0123456789';
const service = served('checkpoints', { shutdownGraceMs: 300, adminKey: ADMIN });

const tenant = async (server: Running, name: string): Promise<string> =>
  (await server.store.tenants.createTenant(name)).apiKey;

const agentOf = async (server: Running, key: string): Promise<string> =>
  (await json(server, key, 'POST', '/v1/agents', {})).json.id;

let n = 0;
/** One call; its id and result. */
async function call(server: Running, key: string, id: string, name: string, args: Loose) {
  const callId = `k${++n}`;
  const res = await json(server, key, 'POST', `/v1/agents/${id}/calls`, {
    calls: [{ id: callId, name, arguments: args }],
  });
  expect(res.status).toBe(200);
  return { callId, result: res.json.results[0] as Loose };
}

/** Every file of the workspace with its sha256 and mode, as the sandbox sees it. */
async function tree(server: Running, key: string, id: string): Promise<string> {
  const { result } = await call(server, key, id, 'bash', {
    command: "find . -path ./.dsh -prune -o -type f -printf '%p %m ' -exec sha256sum {} \\; | sort",
    description: 'hash the workspace',
  });
  expect(result.ok).toBe(true);
  return result.value.stdout;
}

const rollback = (server: Running, key: string, id: string, callId: string) =>
  json(server, key, 'POST', `/v1/agents/${id}/rollback`, { callId });

const lastCheckpoint = async (server: Running, key: string, id: string): Promise<string> => {
  const list = (await json(server, key, 'GET', `/v1/agents/${id}/checkpoints`)).json.checkpoints;
  return list[list.length - 1].callId;
};

async function uploadTar(server: Running, key: string, id: string, files: Array<[string, Buffer]>) {
  const p = pack();
  for (const [name, body] of files) p.entry({ name, mode: 0o640 }, body);
  p.finalize();
  const res = await fetch(`${server.url}/v1/agents/${id}/archive?path=.`, {
    method: 'PUT',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/x-tar' },
    body: new Uint8Array(await buffer(p as never)),
  });
  expect(res.status).toBe(200);
}

it('rolls back a sequence of writes, edits and an archive upload byte-exact', async () => {
  const server = await service.current();
  const key = await tenant(server, 'sequence');
  const id = await agentOf(server, key);
  const binary = randomBytes(300_000);
  const steps: Array<{ callId: string; before: string }> = [];
  const step = async (run: () => Promise<string>) => {
    const before = await tree(server, key, id);
    steps.push({ before, callId: await run() });
  };
  await step(
    async () => (await call(server, key, id, 'write', { file_path: 'a.txt', content: 'one\ntwo\n' })).callId,
  );
  await step(
    async () =>
      (await call(server, key, id, 'edit', { file_path: 'a.txt', old_string: 'two', new_string: 'deux' }))
        .callId,
  );
  await step(async () => {
    await uploadTar(server, key, id, [
      ['a.txt', Buffer.from('replaced by the archive')],
      ['data/blob.bin', binary],
      ['data/new.txt', Buffer.from('new')],
    ]);
    return lastCheckpoint(server, key, id);
  });
  await step(
    async () =>
      (await call(server, key, id, 'write', { file_path: 'data/new.txt', content: 'rewritten' })).callId,
  );
  await step(
    async () =>
      (await call(server, key, id, 'edit', { file_path: 'a.txt', old_string: 'archive', new_string: 'edit' }))
        .callId,
  );
  const final = await tree(server, key, id);
  expect(final).toContain('data/blob.bin 640');

  const mid = steps[2] as { callId: string; before: string };
  const back = await rollback(server, key, id, mid.callId);
  expect(back.status).toBe(200);
  expect(back.json.undone).toEqual(
    steps
      .slice(2)
      .map((s) => s.callId)
      .reverse(),
  );
  expect(await tree(server, key, id)).toBe(mid.before);
  const first = steps[0] as { callId: string; before: string };
  expect((await rollback(server, key, id, first.callId)).status).toBe(200);
  expect(await tree(server, key, id)).toBe(first.before);
  const events = (await json(server, key, 'GET', `/v1/agents/${id}/events?limit=500`)).json.events as Loose[];
  expect(events.filter((e) => e.type === 'agent.rollback').map((e) => e.data.callId)).toEqual([
    mid.callId,
    first.callId,
  ]);
});

it('refuses a rollback over a change bash made after the last tracked call, changing nothing', async () => {
  const server = await service.current();
  const key = await tenant(server, 'untracked');
  const id = await agentOf(server, key);
  const w = await call(server, key, id, 'write', { file_path: 'a.txt', content: 'tracked' });
  await call(server, key, id, 'write', { file_path: 'b.txt', content: 'also tracked' });
  await call(server, key, id, 'bash', { command: 'echo by-bash >> a.txt', description: 'untracked' });
  const before = await tree(server, key, id);
  const refused = await rollback(server, key, id, w.callId);
  expect(refused.status).toBe(409);
  expect(refused.json.error).toMatchObject({ code: 'ROLLBACK_UNSAFE', data: { path: '/workspace/a.txt' } });
  expect(await tree(server, key, id)).toBe(before);
  // An unknown call id and another tenant's agent.
  expect((await rollback(server, key, id, 'never-ran')).json.error.code).toBe('CHECKPOINT_NOT_FOUND');
  const other = await tenant(server, 'other');
  const foreign = await rollback(server, other, id, w.callId);
  expect(foreign.status).toBe(404);
  expect(foreign.json.error.code).toBe('NOT_FOUND');
  expect((await json(server, other, 'GET', `/v1/agents/${id}/checkpoints`)).status).toBe(404);
});

it("keeps the tenant's bounds (oldest dropped) and offers the model tools only once turned on", async () => {
  const server = await service.current();
  const key = await tenant(server, 'bounds');
  const id = await agentOf(server, key);
  const tools = async () =>
    ((await json(server, key, 'GET', `/v1/agents/${id}/tools`)).json.tools as Loose[]).map((t) => t.name);
  expect(await tools()).not.toContain('checkpoint');
  const put = await json(server, key, 'PUT', '/v1/settings', { checkpoints: { maxCount: 3, tools: true } });
  expect(put.json.checkpoints).toEqual({
    maxBytes: 64 * 1024 * 1024,
    maxCount: 3,
    tools: true,
    snapshotBash: false,
  });
  expect(await tools()).toEqual(expect.arrayContaining(['checkpoint', 'rollback']));

  const ids: string[] = [];
  for (let i = 0; i < 5; i++)
    ids.push((await call(server, key, id, 'write', { file_path: 'a.txt', content: `v${i}` })).callId);
  const listed = (await json(server, key, 'GET', `/v1/agents/${id}/checkpoints`)).json.checkpoints as Loose[];
  expect(listed.map((c) => c.callId)).toEqual(ids.slice(2));
  expect((await rollback(server, key, id, ids[0] as string)).json.error.code).toBe('CHECKPOINT_DROPPED');

  // The model marks, writes, and returns.
  const mark = await call(server, key, id, 'checkpoint', { label: 'before the experiment' });
  expect(mark.result.ok).toBe(true);
  await call(server, key, id, 'write', { file_path: 'a.txt', content: 'experiment' });
  await call(server, key, id, 'write', { file_path: 'scratch.txt', content: 'scratch' });
  const back = await call(server, key, id, 'rollback', { checkpoint: mark.result.value.checkpoint });
  expect(back.result.ok).toBe(true);
  expect(back.result.value).toMatchObject({ undone: 3, removed: ['/workspace/scratch.txt'] });
  const cat = await call(server, key, id, 'bash', { command: 'cat a.txt; ls', description: 'look' });
  expect(cat.result.value.stdout).toBe('v4a.txt\n');

  // A program's tools.* calls are tracked as well (the wrapper sits in the agent's own scope).
  const coder = (await json(server, key, 'POST', '/v1/agents', { preset: 'code' })).json.id;
  const program = await call(server, key, coder, 'run_code', {
    description: 'write from a program',
    code: 'await tools.write({ file_path: "from-code.txt", content: "written by a program" }); return 1;',
  });
  expect(program.result.error).toBeUndefined();
  const last = (await json(server, key, 'GET', `/v1/agents/${coder}/checkpoints`)).json.checkpoints.at(-1);
  expect(last).toMatchObject({ tool: 'write', paths: ['/workspace/from-code.txt'] });
  expect((await rollback(server, key, coder, last.callId)).json.removed).toEqual([
    '/workspace/from-code.txt',
  ]);
});

it('keeps checkpoints across a restart, and drops them with the agent', async () => {
  const first = await service.current();
  const key = await tenant(first, 'restart');
  const id = await agentOf(first, key);
  const before = await tree(first, key, id);
  const w = await call(first, key, id, 'write', { file_path: 'kept.txt', content: 'before the restart' });
  await call(first, key, id, 'edit', { file_path: 'kept.txt', old_string: 'before', new_string: 'after' });
  await service.stop(first);

  const second = await service.start();
  const listed = (await json(second, key, 'GET', `/v1/agents/${id}/checkpoints`)).json.checkpoints as Loose[];
  expect(listed.map((c) => c.tool)).toEqual(['write', 'edit']);
  const back = await rollback(second, key, id, w.callId);
  expect(back.status).toBe(200);
  expect(await tree(second, key, id)).toBe(before);

  const again = await call(second, key, id, 'write', { file_path: 'x.txt', content: 'x' });
  expect(again.result.ok).toBe(true);
  const folder = `${service.config.dataDir}/checkpoints/${id}`;
  expect(existsSync(folder)).toBe(true);
  expect((await json(second, key, 'DELETE', `/v1/agents/${id}`)).status).toBeLessThan(300);
  expect(existsSync(folder)).toBe(false);
});

it("holds a tenant's agents together to its checkpointBytes quota, oldest dropped first, across a restart", async () => {
  const first = await service.current();
  const made = await first.store.tenants.createTenant('quota');
  const key = made.apiKey;
  const limits = (server: Running) => json(server, key, 'GET', '/v1/limits');
  const set = await json(first, ADMIN, 'PUT', `/v1/tenants/${made.id}/limits`, { checkpointBytes: 2500 });
  expect(set.status).toBe(200);
  /** Two writes of 1000 bytes: the second keeps the first's as its pre-image. */
  const twice = async (server: Running, id: string) => {
    for (const fill of ['a', 'b']) {
      const { result } = await call(server, key, id, 'write', {
        file_path: 'f.txt',
        content: fill.repeat(1000),
      });
      expect(result.ok).toBe(true);
    }
    return lastCheckpoint(server, key, id);
  };
  const one = await agentOf(first, key);
  const oldest = await twice(first, one);
  await twice(first, await agentOf(first, key));
  expect((await limits(first)).json.usage.checkpointBytes).toBe(2000);
  await service.stop(first);

  const second = await service.start();
  expect((await limits(second)).json).toMatchObject({
    quotas: { checkpointBytes: 2500 },
    usage: { checkpointBytes: 2000 },
  });
  await twice(second, await agentOf(second, key)); // 3000: past the quota, agent one's went
  expect((await limits(second)).json.usage.checkpointBytes).toBe(2000);
  expect((await rollback(second, key, one, oldest)).json.error.code).toBe('CHECKPOINT_DROPPED');
});
