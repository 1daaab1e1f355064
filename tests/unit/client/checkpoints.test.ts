// The client's agent.checkpoints() and agent.rollback() against the service on real loopback HTTP
// (the app assembled as serve.ts does, with a checkpoint folder, the memory sandbox provider): the
// tracked calls are listed, a rollback restores what the writes changed and says what it undid, a
// refusal arrives as a DshError with its stable code, and another tenant cannot reach the agent.
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ServerType, serve } from '@hono/node-server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DshClient, isDshError, textOf } from '../../../client/index.ts';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import { createApp } from '../../../host/api/app.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import { openStore } from '../../../host/store/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'dsh-client-ckpt-'));
const store = openStore({ path: ':memory:' });
const { agents } = assembleAgents({ store, sandboxes: createMemoryProvider(), checkpointDir: dir });
const app = createApp({ startedAt: Date.now(), version: 'test', store, agents });
const keyA = (await store.tenants.createTenant('tenant-a')).apiKey;
const keyB = (await store.tenants.createTenant('tenant-b')).apiKey;
let server: ServerType;
let baseUrl: string;

beforeAll(async () => {
  server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
  });
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await agents.close(0);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

it('lists checkpoints and rolls back through the client, by seq where call ids repeat', async () => {
  const client = new DshClient({ baseUrl, apiKey: keyA });
  const agent = await client.agents.create({ preset: 'standard' });
  // The client numbers each batch's calls from c1: every one of these is `c1`.
  await agent.call('write', { file_path: 'a.txt', content: 'first' });
  await agent.call('write', { file_path: 'a.txt', content: 'second' });
  await agent.call('write', { file_path: 'b.txt', content: 'new' });
  const listed = await agent.checkpoints();
  expect(listed.map((c) => [c.seq, c.callId, c.tool])).toEqual([
    [1, 'c1', 'write'],
    [2, 'c1', 'write'],
    [3, 'c1', 'write'],
  ]);
  expect(await agent.rollback({ seq: 2 })).toEqual({
    callId: 'c1',
    seq: 2,
    undone: ['c1', 'c1'],
    restored: ['/workspace/a.txt'],
    removed: ['/workspace/b.txt'],
  });
  expect(textOf(await agent.call('read', { file_path: 'a.txt' }))).toContain('first');
  // By call id: the newest call of that id (the only one left).
  expect((await agent.rollback('c1')).removed).toEqual(['/workspace/a.txt']);

  const refused = await agent.rollback({ seq: 3 }).catch((e: unknown) => e);
  expect(isDshError(refused, 'CHECKPOINT_NOT_FOUND')).toBe(true);
  const stranger = new DshClient({ baseUrl, apiKey: keyB });
  const error = await stranger.agents.get(agent.id).catch((e: unknown) => e);
  expect(isDshError(error) && error.code).toBe('NOT_FOUND');
});
