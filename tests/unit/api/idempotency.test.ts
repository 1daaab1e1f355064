// POST /v1/agents/:id/calls with an Idempotency-Key, through the real app (libsql in memory, the
// memory sandbox provider): a key runs its batch once (a retry, done or still running, gets the
// first answer marked replayed), another body under the key is refused, a bad key is refused, and
// a batch claimed by a process that is gone is answered from the session log (logged results,
// INTERRUPTED for the rest) without running anything.
import * as v from 'valibot';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  bodyHashOf,
  createIdempotency,
  STORED_ANSWER_MAX,
  TENANT_STORED_MAX,
} from '../../../host/api/idempotency.ts';
import { defineTool } from '../../../host/tools/index.ts';
import { until } from '../../helpers/until.ts';
import { type Api, type Loose, makeApi } from './harness.ts';
import { readSse } from './sse.ts';

let api: Api;
let runs: string[];
let gate: Promise<void> | undefined;
beforeEach(async () => {
  api = await makeApi();
  runs = [];
  gate = undefined;
  // The side effect counted: every run of `count` is one entry.
  // Installed in the creator preset's own layer, as a deployment installs a tool of its own.
  api.registry.scope('creator').register(
    defineTool({
      name: 'count',
      description: 'counts its runs',
      parameters: v.object({ tag: v.string() }),
      output: { schema: v.string() },
      async execute({ tag }) {
        runs.push(tag);
        await gate;
        return `run ${runs.length}`;
      },
    }),
  );
});
afterEach(async () => {
  await api.close();
});

const lastSeq = async (sessionId: string) => (await api.store.events.lastSeq?.(sessionId)) ?? 0;
const makeAgent = () => api.createAgent(api.keyA, { preset: 'creator' });
const batch = (tag = 'a') => ({ calls: [{ id: 'c1', name: 'count', arguments: { tag } }] });
const keyed = (agentId: string, key: string, body: unknown = batch(), headers: Record<string, string> = {}) =>
  api.request(api.keyA, 'POST', `/v1/agents/${agentId}/calls`, body, { 'Idempotency-Key': key, ...headers });

describe('Idempotency-Key on POST /v1/agents/:id/calls', () => {
  it('runs a batch once: a retry with the same key gets the same answer, marked replayed', async () => {
    const agent = await makeAgent();
    const first = await keyed(agent.id, 'key-1');
    expect(first.status).toBe(200);
    expect(first.json.results[0]).toMatchObject({ id: 'c1', ok: true });
    expect(first.headers.get('Idempotent-Replayed')).toBeNull();
    const again = await keyed(agent.id, 'key-1');
    expect(again.status).toBe(200);
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    expect(again.json).toEqual(first.json);
    expect(runs).toEqual(['a']);
    // Another key runs again; so does a request without one.
    await keyed(agent.id, 'key-2');
    await api.call(api.keyA, agent.id, batch().calls);
    expect(runs).toEqual(['a', 'a', 'a']);
  });

  it('a retry while the first still runs here waits for it and runs nothing', async () => {
    const agent = await makeAgent();
    let open!: () => void;
    gate = new Promise((resolve) => (open = resolve));
    const first = keyed(agent.id, 'key-1');
    await until(() => runs.length === 1);
    const second = keyed(agent.id, 'key-1');
    const third = keyed(agent.id, 'key-1');
    open();
    const [a, b, c] = await Promise.all([first, second, third]);
    expect(runs).toEqual(['a']);
    expect(b.json).toEqual(a.json);
    expect(c.json).toEqual(a.json);
    expect(b.headers.get('Idempotent-Replayed')).toBe('true');
  });

  it('refuses the key with another body (422), and scopes keys to the agent', async () => {
    const agent = await makeAgent();
    const other = await makeAgent();
    await keyed(agent.id, 'key-1');
    const reused = await keyed(agent.id, 'key-1', batch('b'));
    expect(reused.status).toBe(422);
    expect(reused.json.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    // The same body with its keys in another order is the same request.
    const reordered = await keyed(agent.id, 'key-1', {
      calls: [{ arguments: { tag: 'a' }, name: 'count', id: 'c1' }],
    });
    expect(reordered.status).toBe(200);
    expect((await keyed(other.id, 'key-1', batch('b'))).status).toBe(200);
    expect(runs).toEqual(['a', 'b']);
  });

  it('refuses a key that is empty, too long or not printable ASCII (400), running nothing', async () => {
    const agent = await makeAgent();
    for (const bad of ['', 'k'.repeat(256), 'clé', 'a\tb']) {
      const res = await keyed(agent.id, bad);
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.json.error.code).toBe('IDEMPOTENCY_KEY_INVALID');
    }
    expect((await keyed(agent.id, `${'k'.repeat(253)} ~`)).status).toBe(200);
    expect(runs).toEqual(['a']);
  });

  it('over SSE, a replay sends the results event only', async () => {
    const agent = await makeAgent();
    const first = await keyed(agent.id, 'key-1');
    const res = await api.app.request(`/v1/agents/${agent.id}/calls`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${api.keyA}`,
        'Content-Type': 'application/json',
        Accept: 'text/event-stream',
        'Idempotency-Key': 'key-1',
      },
      body: JSON.stringify(batch()),
    });
    expect(res.headers.get('Idempotent-Replayed')).toBe('true');
    const messages = await readSse(res.body as ReadableStream<Uint8Array>);
    expect(messages.map((m) => m.event)).toEqual(['results']);
    expect(messages[0]?.data).toEqual(first.json);
    expect(runs).toEqual(['a']);
  });

  it('stores a keyed SSE batch as it streamed: a JSON retry gets its results', async () => {
    const agent = await makeAgent();
    const res = await api.app.request(`/v1/agents/${agent.id}/calls`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${api.keyA}`,
        'Content-Type': 'application/json',
        Accept: 'text/event-stream',
        'Idempotency-Key': 'key-1',
      },
      body: JSON.stringify(batch()),
    });
    const messages = await readSse(res.body as ReadableStream<Uint8Array>);
    expect(messages.map((m) => m.event)).toEqual(['progress', 'progress', 'results']);
    const again = await keyed(agent.id, 'key-1');
    expect(again.json).toEqual(messages[2]?.data);
    expect(runs).toEqual(['a']);
  });

  it('stores an error answer too; an error the client retries (503) frees the key instead', async () => {
    const agent = await makeAgent();
    const tenantId = ((await api.store.tenants.verifyKey(api.keyA)) as { id: string }).id;
    const stepless = { ...batch(), step: 'stp_unknown' };
    const first = await keyed(agent.id, 'key-1', stepless);
    expect(first.status).toBe(404);
    expect(first.json.error.code).toBe('STEP_NOT_FOUND');
    const again = await keyed(agent.id, 'key-1', stepless);
    expect(again.status).toBe(404);
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    expect(again.json).toEqual(first.json);

    await api.agents.close(0); // the service is shutting down: 503, nothing ran
    const refused = await keyed(agent.id, 'key-2');
    expect(refused.status).toBe(503);
    expect(await api.store.callBatches.get({ tenantId, agentId: agent.id, key: 'key-2' })).toBeUndefined();
    expect(runs).toEqual([]);
  });

  it('keeps no answer past STORED_ANSWER_MAX: its retries are answered from the log, alike', async () => {
    api.registry.scope('creator').register(
      defineTool({
        name: 'big',
        description: 'answers a quarter of what an answer may store',
        parameters: v.object({ tag: v.string() }),
        output: { schema: v.string() },
        async execute({ tag }) {
          runs.push(tag);
          return tag.repeat(STORED_ANSWER_MAX / 4);
        },
      }),
    );
    const agent = await makeAgent();
    const body = {
      calls: Array.from({ length: 6 }, (_, i) => ({ id: `c${i}`, name: 'big', arguments: { tag: `${i}` } })),
    };
    const first = await keyed(agent.id, 'big', body);
    expect(first.status).toBe(200);
    const tenantId = (await api.request(api.keyA, 'GET', '/v1/keys')).json.keys[0].tenantId;
    const row = await api.store.callBatches.get({ tenantId, agentId: agent.id, key: 'big' });
    expect(row?.state === 'done' && row.outcome.body.length).toBeLessThan(100);
    const again = await keyed(agent.id, 'big', body);
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    expect(again.json.results.map((r: Loose) => [r.id, r.ok, r.content])).toEqual(
      first.json.results.map((r: Loose) => [r.id, r.ok, r.content]),
    );
    expect(runs).toHaveLength(6);
  });

  it("holds a tenant's stored answers to its share: past it, retries are answered from the log", async () => {
    // Round 5 found: an answer under STORED_ANSWER_MAX was stored whole for 24 hours outside the
    // log's budget, which holds a repeated output once: 30 calls returning the same 16 KiB cost the
    // log ~21 KB and the store ~1 MB: 39 such keyed batches took 0.8 MB of log and 38.5 MB of store.
    api.registry.scope('creator').register(
      defineTool({
        name: 'same',
        description: 'answers the same 16 KiB each time',
        parameters: v.object({}),
        output: { schema: v.string() },
        async execute() {
          return 'x'.repeat(16 * 1024);
        },
      }),
    );
    const agent = await makeAgent();
    // 30 calls: an answer of about 1 MB (each output twice: value and text), under STORED_ANSWER_MAX.
    const body = {
      calls: Array.from({ length: 30 }, (_, i) => ({ id: `c${i}`, name: 'same', arguments: {} })),
    };
    const size = (await keyed(agent.id, 'k0', body)).text.length;
    expect(size).toBeLessThan(STORED_ANSWER_MAX);
    const batches = Math.ceil(TENANT_STORED_MAX / size) + 4;
    for (let i = 1; i < batches; i++) expect((await keyed(agent.id, `k${i}`, body)).status).toBe(200);
    const { bytes } = api.store.db
      .prepare('SELECT coalesce(sum(length(body)), 0) AS bytes FROM call_batches')
      .get() as { bytes: number };
    expect(bytes).toBeLessThanOrEqual(TENANT_STORED_MAX + STORED_ANSWER_MAX);
    // The last one is still answered whole, from the log.
    const again = await keyed(agent.id, `k${batches - 1}`, body);
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    expect(again.json.results).toHaveLength(30);
    expect(again.json.results[29].ok).toBe(true);
  });

  it('writes nothing to the store without the header', async () => {
    const agent = await makeAgent();
    await api.call(api.keyA, agent.id, batch().calls);
    expect(api.store.db.prepare('SELECT count(*) AS n FROM call_batches').all()).toEqual([{ n: 0 }]);
    await keyed(agent.id, 'key-1');
    expect(api.store.db.prepare('SELECT count(*) AS n FROM call_batches').all()).toEqual([{ n: 1 }]);
  });

  it('answers a batch whose process died from the log: logged results, INTERRUPTED for the rest, nothing run', async () => {
    const agent = await makeAgent();
    const sessionId = agent.id;
    const tenantId = ((await api.store.tenants.verifyKey(api.keyA)) as { id: string }).id;
    // An earlier batch that used the same call id: logged before the claim, never taken for this one.
    await api.call(api.keyA, agent.id, [{ id: 'c3', name: 'count', arguments: { tag: 'earlier' } }]);
    const body = {
      calls: [
        { id: 'c1', name: 'count', arguments: { tag: 'x' } },
        { id: 'c2', name: 'count', arguments: { tag: 'y' } },
        { id: 'c3', name: 'count', arguments: { tag: 'z' } },
      ],
    };
    // Another process claimed the key and died: c1 finished, c2 was running, c3 never started.
    const claim = await api.store.callBatches.claim({
      tenantId,
      agentId: agent.id,
      key: 'key-1',
      afterSeq: await lastSeq(agent.id),
      bodyHash: bodyHashOf(body),
      bootId: 'a-process-that-is-gone',
    });
    expect(claim.kind).toBe('claimed');
    const logged = { sessionId, surface: 'current' as const };
    await api.store.events.append([
      { ...logged, type: 'tool.call', callId: 'c1', data: { name: 'count', arguments: { tag: 'x' } } },
      { ...logged, type: 'tool.call', callId: 'c2', data: { name: 'count', arguments: { tag: 'y' } } },
      {
        ...logged,
        type: 'tool.result',
        callId: 'c1',
        data: {
          name: 'count',
          ok: true,
          content: [{ type: 'text', text: 'run 7' }],
          durationMs: 3,
          value: 'run 7',
        },
      },
    ]);
    runs.length = 0;

    const res = await keyed(agent.id, 'key-1', body);
    expect(res.status).toBe(200);
    expect(res.headers.get('Idempotent-Replayed')).toBe('true');
    const results: Loose[] = res.json.results;
    expect(results.map((r) => r.id)).toEqual(['c1', 'c2', 'c3']);
    expect(results[0]).toEqual({
      id: 'c1',
      name: 'count',
      ok: true,
      content: [{ type: 'text', text: 'run 7' }],
      value: 'run 7',
      durationMs: 3,
    });
    expect(results[1]).toMatchObject({ ok: false, error: { code: 'INTERRUPTED', data: { logged: true } } });
    expect(results[2]).toMatchObject({ ok: false, error: { code: 'INTERRUPTED', data: { logged: false } } });
    expect(results[2].content[0].text).toBe(`Error: ${results[2].error.message}`);
    expect(runs).toEqual([]);

    // The answer is stored: a result logged later (the new owner's repair) does not change it.
    await api.store.events.append([
      {
        ...logged,
        type: 'tool.result',
        callId: 'c2',
        data: { name: 'count', ok: true, content: [], durationMs: 1 },
      },
    ]);
    const again = await keyed(agent.id, 'key-1', body);
    expect(again.json).toEqual(res.json);
    expect(runs).toEqual([]);
  });

  it("a result the dead process's successor logged (INTERRUPTED by its repair) is the answer", async () => {
    const agent = await makeAgent();
    const tenantId = ((await api.store.tenants.verifyKey(api.keyA)) as { id: string }).id;
    const body = batch('x');
    await api.store.callBatches.claim({
      tenantId,
      agentId: agent.id,
      key: 'key-1',
      afterSeq: await lastSeq(agent.id),
      bodyHash: bodyHashOf(body),
      bootId: 'gone',
    });
    const repaired = { code: 'INTERRUPTED', message: 'The service stopped under this call.' };
    await api.store.events.append([
      { sessionId: agent.id, surface: 'current', type: 'tool.call', callId: 'c1', data: { name: 'count' } },
      {
        sessionId: agent.id,
        surface: 'current',
        type: 'tool.result',
        callId: 'c1',
        data: { name: 'count', ok: false, content: [], durationMs: 0, error: repaired },
      },
    ]);
    const res = await keyed(agent.id, 'key-1', body);
    expect(res.json.results).toEqual([
      { id: 'c1', name: 'count', ok: false, content: [], durationMs: 0, error: repaired },
    ]);
    expect(runs).toEqual([]);
  });
});

describe('Idempotency-Key between two replicas on one store', () => {
  const replicas = (alive: boolean) => {
    const shared = { batches: api.store.callBatches, events: api.store.events };
    return [
      createIdempotency({ ...shared, bootId: 'replica-a' }),
      createIdempotency({
        ...shared,
        bootId: 'replica-b',
        holderAlive: async (id) => alive && id === 'replica-a',
      }),
    ] as const;
  };
  const keyedBatch = async (agentId: string) => ({
    tenantId: ((await api.store.tenants.verifyKey(api.keyA)) as { id: string }).id,
    agentId,
    key: 'key-1',
    sessionId: agentId,
    bodyHash: bodyHashOf(batch()),
    calls: batch().calls,
  });

  it('of two replicas claiming one key at once, one runs it', async () => {
    const agent = await makeAgent();
    const [a, b] = replicas(true);
    const request = await keyedBatch(agent.id);
    const tickets = await Promise.allSettled([a.begin(request), b.begin(request)]);
    const running = tickets.filter((t) => t.status === 'fulfilled' && t.value.kind === 'run');
    expect(running).toHaveLength(1);
    const other = tickets.find((t) => t !== running[0]);
    expect(other).toMatchObject({ status: 'rejected', reason: { code: 'IDEMPOTENCY_KEY_IN_PROGRESS' } });
  });

  it('while the claiming replica runs the batch, another answers IN_PROGRESS; once done, its answer', async () => {
    const agent = await makeAgent();
    const [a, b] = replicas(true);
    const request = await keyedBatch(agent.id);
    const ticket = await a.begin(request);
    if (ticket.kind !== 'run') throw new Error('replica a should run the batch');
    const busy = await b.begin(request).catch((error: unknown) => error);
    expect(busy).toMatchObject({ code: 'IDEMPOTENCY_KEY_IN_PROGRESS', data: { retryAfterS: 1 } });
    const results = [{ id: 'c1', name: 'count', ok: true, content: [], durationMs: 1 }];
    const text = await ticket.done(results);
    expect(await b.begin(request)).toEqual({ kind: 'replay', outcome: { status: 200, body: text } });
  });

  it('once the claiming replica is gone, another answers from the log', async () => {
    const agent = await makeAgent();
    const [a, b] = replicas(false);
    const request = await keyedBatch(agent.id);
    expect((await a.begin(request)).kind).toBe('run');
    const answer = await b.begin(request);
    expect(answer.kind).toBe('replay');
    const { results } = JSON.parse((answer as { outcome: { body: string } }).outcome.body);
    expect(results).toMatchObject([
      { id: 'c1', ok: false, error: { code: 'INTERRUPTED', data: { logged: false } } },
    ]);
  });
});
