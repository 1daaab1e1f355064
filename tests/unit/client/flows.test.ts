// The generated types drive the main flows through openapi-fetch against the service on real
// loopback HTTP (the app assembled as serve.ts does, the memory sandbox provider): create an agent,
// put and get a file, run calls, read the events. The test compiles under the project's strict
// tsconfig (npx tsc), so a response shape the client does not type as JSON fails typechecking.
import type { AddressInfo } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import createClient from 'openapi-fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { paths } from '../../../client/openapi.ts';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import { createApp } from '../../../host/api/app.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import { openStore } from '../../../host/store/index.ts';

const store = openStore({ path: ':memory:' });
const { agents } = assembleAgents({ store, sandboxes: createMemoryProvider() });
const app = createApp({ startedAt: Date.now(), version: 'test', store, agents });
const key = (await store.tenants.createTenant('tenant-a')).apiKey;
let server: ServerType;
let client: ReturnType<typeof createClient<paths>>;

beforeAll(async () => {
  server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
  });
  client = createClient<paths>({
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    headers: { Authorization: `Bearer ${key}` },
  });
});

afterAll(async () => {
  await agents.close(0);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  store.close();
});

describe('a client generated from /openapi.json', () => {
  it('creates an agent, moves files, runs calls and reads the events, all typed', async () => {
    const created = await client.POST('/v1/agents', { body: { preset: 'standard' } });
    expect(created.response.status).toBe(201);
    const id: string = created.data?.id ?? '';

    const put = await client.PUT('/v1/agents/{id}/files', {
      params: { path: { id }, query: { path: 'notes.txt' } },
      body: 'hello from a typed client\n',
      headers: { 'Content-Type': 'application/octet-stream' },
      bodySerializer: (body) => body,
    });
    const bytes: number | undefined = put.data?.bytes;
    expect(bytes).toBe(26);

    const calls = await client.POST('/v1/agents/{id}/calls', {
      params: { path: { id } },
      body: {
        calls: [
          { id: 'r', name: 'read', arguments: { file_path: 'notes.txt' } },
          { id: 'w', name: 'write', arguments: { file_path: 'out.txt', content: 'written\n' } },
        ],
      },
    });
    const results = calls.data?.results ?? [];
    expect(results.map((r) => [r.id, r.ok])).toEqual([
      ['r', true],
      ['w', true],
    ]);
    const first = results[0]?.content[0];
    expect(first?.type === 'text' ? first.text : '').toContain('hello from a typed client');

    const file = await client.GET('/v1/agents/{id}/files', {
      params: { path: { id }, query: { path: 'out.txt' } },
      parseAs: 'text',
    });
    expect(file.data).toBe('written\n');

    const events = await client.GET('/v1/agents/{id}/events', { params: { path: { id }, query: {} } });
    const all = events.data?.events ?? [];
    const types = all.filter((e) => e.type.startsWith('tool.')).map((e) => `${e.type}:${e.callId ?? ''}`);
    expect(types.sort()).toEqual(['tool.call:r', 'tool.call:w', 'tool.result:r', 'tool.result:w']);
    // The upload is in the log as the client's action.
    expect(all.filter((e) => e.type.startsWith('client.')).map((e) => e.type)).toEqual([
      'client.file_write',
      'client.result',
    ]);
    expect(events.data?.next).toBeGreaterThan(0);

    const missing = await client.GET('/v1/agents/{id}', { params: { path: { id: 'agt_missing' } } });
    expect(missing.response.status).toBe(404);
    expect(missing.error?.error.code).toBe('NOT_FOUND');
  });
});
