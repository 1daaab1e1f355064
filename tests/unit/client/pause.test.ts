// The client's agent.pause() and agent.resume() against the service on real loopback HTTP (the app
// assembled as serve.ts does, the memory sandbox provider): a pause answers its view, a paused
// agent reads `paused`, a call through the client resumes it, and another tenant cannot get a
// handle on it (NOT_FOUND).
import type { AddressInfo } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DshClient, isDshError } from '../../../client/index.ts';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import { createApp } from '../../../host/api/app.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import { openStore } from '../../../host/store/index.ts';

const store = openStore({ path: ':memory:' });
const { agents } = assembleAgents({ store, sandboxes: createMemoryProvider() });
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
});

it('pauses and resumes an agent through the client', async () => {
  const client = new DshClient({ baseUrl, apiKey: keyA });
  const agent = await client.agents.create({ preset: 'standard' });
  await agent.call('write', { file_path: 'a.txt', content: 'a' });
  const paused = await agent.pause('freeze');
  expect(paused).toMatchObject({ agentId: agent.id, paused: true, pause: { mode: 'freeze', by: 'api' } });
  expect(paused.holds).toEqual(['memory']);
  expect((await agent.usage()).state.sandbox).toBe('paused');
  await agent.call('read', { file_path: 'a.txt' });
  expect((await agent.usage()).state.sandbox).not.toBe('paused');
  expect((await agent.pause()).pause?.mode).toBe('stop');
  expect(await agent.resume()).toEqual({ agentId: agent.id, paused: false });

  const stranger = new DshClient({ baseUrl, apiKey: keyB });
  const error = await stranger.agents.get(agent.id).catch((e: unknown) => e);
  expect(isDshError(error) && error.code).toBe('NOT_FOUND');
});
