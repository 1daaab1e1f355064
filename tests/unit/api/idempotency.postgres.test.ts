// Idempotency keys through the real app on a PostgreSQL store (the app assembled as serve.ts does,
// the memory sandbox provider): a key runs its batch once, and a batch claimed by a process that
// is gone is answered from the PostgreSQL log without running anything. The libsql cases, in more
// detail, are idempotency.test.ts; the claim race between two replicas is the port's contract
// (tests/unit/store/call-batches.postgres.test.ts).
import { randomBytes } from 'node:crypto';
import { afterEach, expect, it } from 'vitest';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import { createApp } from '../../../host/api/app.ts';
import { bodyHashOf } from '../../../host/api/idempotency.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import { openPgStore } from '../../../host/store/pg/index.ts';
import type { Store } from '../../../host/store/store.ts';
import { createDatabase, describePostgres, type TestDatabase } from '../../helpers/postgres.ts';
import type { Loose } from './harness.ts';

describePostgres('Idempotency-Key on PostgreSQL', () => {
  let database: TestDatabase | undefined;
  let store: Store | undefined;
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    await store?.close();
    await database?.drop();
    close = undefined;
    store = undefined;
    database = undefined;
  });

  const start = async () => {
    database = await createDatabase();
    const opened = await openPgStore({ url: database.url, poolSize: 4, secretsKey: randomBytes(32) });
    store = opened;
    const { agents } = assembleAgents({ store: opened, sandboxes: createMemoryProvider() });
    close = () => agents.close(0);
    const app = createApp({ startedAt: Date.now(), version: 'test', store: opened, agents });
    const tenant = await opened.tenants.createTenant('tenant-a');
    const headers = { Authorization: `Bearer ${tenant.apiKey}`, 'Content-Type': 'application/json' };
    const created = await app.request('/v1/agents', {
      method: 'POST',
      headers,
      body: '{"preset":"standard"}',
    });
    const agentId = ((await created.json()) as { id: string }).id;
    const post = async (key: string, body: unknown) => {
      const res = await app.request(`/v1/agents/${agentId}/calls`, {
        method: 'POST',
        headers: { ...headers, 'Idempotency-Key': key },
        body: JSON.stringify(body),
      });
      const json = (await res.json()) as Loose;
      return { status: res.status, replayed: res.headers.get('idempotent-replayed'), json };
    };
    const calls = async (callId: string) =>
      (await opened.events.list(agentId)).filter((e) => e.type === 'tool.call' && e.callId === callId).length;
    return { store: opened, tenantId: tenant.id, agentId, post, calls };
  };

  it('runs a keyed batch once; the retry gets the stored answer', async () => {
    const { post, calls } = await start();
    const body = { calls: [{ id: 'w', name: 'write', arguments: { file_path: 'a.txt', content: 'a' } }] };
    const first = await post('key-1', body);
    expect(first).toMatchObject({ status: 200, replayed: null, json: { results: [{ id: 'w', ok: true }] } });
    const again = await post('key-1', body);
    expect(again).toMatchObject({ status: 200, replayed: 'true', json: first.json });
    expect((await post('key-1', { calls: [{ ...body.calls[0], id: 'x' }] })).status).toBe(422);
    expect(await calls('w')).toBe(1);
  });

  it('answers a batch whose process died from the log, running nothing', async () => {
    const { store, tenantId, agentId, post, calls } = await start();
    const body = {
      calls: [
        { id: 'a', name: 'write', arguments: { file_path: 'a.txt', content: 'a' } },
        { id: 'b', name: 'write', arguments: { file_path: 'b.txt', content: 'b' } },
      ],
    };
    await store.callBatches.claim({
      tenantId,
      agentId,
      key: 'key-1',
      afterSeq: (await store.events.lastSeq?.(agentId)) ?? 0,
      bodyHash: bodyHashOf(body),
      bootId: 'gone',
    });
    await store.events.append([
      { sessionId: agentId, surface: 'current', type: 'tool.call', callId: 'a', data: { name: 'write' } },
      {
        sessionId: agentId,
        surface: 'current',
        type: 'tool.result',
        callId: 'a',
        data: { name: 'write', ok: true, content: [{ type: 'text', text: 'wrote' }], durationMs: 2 },
      },
    ]);
    const res = await post('key-1', body);
    expect(res.replayed).toBe('true');
    expect(res.json.results).toEqual([
      { id: 'a', name: 'write', ok: true, content: [{ type: 'text', text: 'wrote' }], durationMs: 2 },
      expect.objectContaining({
        id: 'b',
        ok: false,
        error: expect.objectContaining({ code: 'INTERRUPTED' }),
      }),
    ]);
    expect(await calls('a')).toBe(1); // the one logged by the process that died
    expect(await calls('b')).toBe(0);
  });
});
