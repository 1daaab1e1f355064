// The client retries a call batch with its Idempotency-Key, against the service on real loopback
// HTTP (the app assembled as serve.ts does, the memory sandbox provider): an answer lost on the
// way back, a 503, a stream cut before its results are all retried with the same key, and the
// batch runs once (one `tool.call` in the agent's log); a 4xx is not retried, `retry: false`
// sends once, and the caller's AbortSignal ends the retries at once.
import type { AddressInfo } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentEvent, DshClient, DshError, isDshError } from '../../../client/index.ts';
import { DEFAULT_RETRY, retryDelayOf } from '../../../client/retry.ts';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import { createApp } from '../../../host/api/app.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import { openStore } from '../../../host/store/index.ts';

const store = openStore({ path: ':memory:' });
const { agents } = assembleAgents({ store, sandboxes: createMemoryProvider() });
const app = createApp({ startedAt: Date.now(), version: 'test', store, agents });
const key = (await store.tenants.createTenant('tenant-a')).apiKey;
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

/** A key the service refuses (400). */
const TOO_LONG = 'k'.repeat(300);
const fast = { attempts: 4, baseDelayMs: 1, maxDelayMs: 5 };
const isCalls = (request: Request) => request.method === 'POST' && request.url.endsWith('/calls');
const unavailable = () =>
  new Response(JSON.stringify({ error: { code: 'SHUTTING_DOWN', message: 'restarting' } }), {
    status: 503,
    headers: { 'content-type': 'application/json' },
  });

/** The `tool.call` events of `callId` in the agent's log: how often the call ran. */
const runsOf = async (agentId: string, callId: string) =>
  (await store.events.list(agentId)).filter((e) => e.type === 'tool.call' && e.callId === callId).length;

describe('call batches retried with their Idempotency-Key', () => {
  it('an answer lost on the way back is asked for again with the same key; the batch ran once', async () => {
    const keys: (string | null)[] = [];
    let lose = true;
    const client = new DshClient({
      baseUrl,
      apiKey: key,
      retry: fast,
      async fetch(request) {
        if (!isCalls(request)) return fetch(request);
        keys.push(request.headers.get('idempotency-key'));
        const response = await fetch(request);
        if (!lose) return response;
        lose = false;
        await response.body?.cancel();
        throw new TypeError('fetch failed: the connection was reset');
      },
    });
    const agent = await client.agents.create({ preset: 'standard' });
    const [result] = await agent.batch([
      { id: 'w', name: 'write', arguments: { file_path: 'a.txt', content: 'a' } },
    ]);
    expect(result).toMatchObject({ id: 'w', ok: true });
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    expect(await runsOf(agent.id, 'w')).toBe(1);
    // The next batch has a key of its own.
    await agent.call('write', { file_path: 'b.txt', content: 'b' });
    expect(keys[2]).not.toBe(keys[0]);
  });

  it('retries 503s with the same key, and sends the key given', async () => {
    const keys: (string | null)[] = [];
    let refuse = 2;
    const client = new DshClient({
      baseUrl,
      apiKey: key,
      retry: fast,
      async fetch(request) {
        if (!isCalls(request)) return fetch(request);
        keys.push(request.headers.get('idempotency-key'));
        return refuse-- > 0 ? unavailable() : fetch(request);
      },
    });
    const agent = await client.agents.create({ preset: 'standard' });
    const result = await agent.call(
      'write',
      { file_path: 'a.txt', content: 'a' },
      { idempotencyKey: 'mine-1' },
    );
    expect(result.ok).toBe(true);
    expect(keys).toEqual(['mine-1', 'mine-1', 'mine-1']);
  });

  it('retries a call stream cut before its results; the retry answers from the first run', async () => {
    let cut = true;
    let attempts = 0;
    const client = new DshClient({
      baseUrl,
      apiKey: key,
      retry: fast,
      async fetch(request) {
        const response = await fetch(request);
        if (!isCalls(request)) return response;
        attempts++;
        if (!cut || response.body === null) return response;
        cut = false;
        // The first progress event gets through, then the connection drops.
        const text = await response.text();
        const first = text.slice(0, text.indexOf('\n\n') + 2);
        let sent = false;
        return new Response(
          new ReadableStream<Uint8Array>({
            pull(controller) {
              if (sent) return controller.error(new TypeError('terminated: the connection was reset'));
              sent = true;
              controller.enqueue(new TextEncoder().encode(first));
            },
          }),
          response,
        );
      },
    });
    const agent = await client.agents.create({ preset: 'standard' });
    const seen: AgentEvent[] = [];
    const results = await agent.batch(
      [{ id: 'w', name: 'write', arguments: { file_path: 'a.txt', content: 'a' } }],
      {
        onProgress: (event) => seen.push(event),
      },
    );
    expect(results).toMatchObject([{ id: 'w', ok: true }]);
    expect(attempts).toBe(2);
    expect(seen.map((e) => e.type)).toEqual(['tool.call']);
    expect(await runsOf(agent.id, 'w')).toBe(1);
  });

  it('does not retry what is the answer (a 400), nor anything with retry: false', async () => {
    let sent = 0;
    const counting = (retry: false | typeof fast) =>
      new DshClient({
        baseUrl,
        apiKey: key,
        retry,
        async fetch(request) {
          if (!isCalls(request)) return fetch(request);
          sent++;
          return request.headers.get('idempotency-key') === TOO_LONG ? fetch(request) : unavailable();
        },
      });
    const agent = await counting(fast).agents.create({ preset: 'standard' });
    const bad = await agent
      .batch([{ name: 'read', arguments: {} }], { idempotencyKey: TOO_LONG })
      .catch((e) => e);
    expect(isDshError(bad, 'IDEMPOTENCY_KEY_INVALID')).toBe(true);
    expect(sent).toBe(1);
    sent = 0;
    const once = await counting(false).agents.get(agent.id);
    const refused = await once.batch([{ name: 'read', arguments: {} }]).catch((e) => e);
    expect(isDshError(refused, 'SHUTTING_DOWN')).toBe(true);
    expect(sent).toBe(1);
    sent = 0;
    const spent = await (await counting(fast).agents.get(agent.id))
      .batch([{ name: 'read', arguments: {} }])
      .catch((e) => e);
    expect(isDshError(spent, 'SHUTTING_DOWN')).toBe(true);
    expect(sent).toBe(fast.attempts);
  });

  it("stops retrying as soon as the caller's signal aborts, with its reason", async () => {
    const controller = new AbortController();
    let sent = 0;
    const client = new DshClient({
      baseUrl,
      apiKey: key,
      retry: { attempts: 10, baseDelayMs: 60_000, maxDelayMs: 60_000 },
      async fetch(request) {
        if (!isCalls(request)) return fetch(request);
        sent++;
        queueMicrotask(() => controller.abort(new Error('caller gave up')));
        return unavailable();
      },
    });
    const agent = await client.agents.create({ preset: 'standard' });
    const error = await agent
      .batch([{ name: 'read', arguments: {} }], { signal: controller.signal })
      .catch((e) => e);
    expect(error).toEqual(new Error('caller gave up'));
    expect(sent).toBe(1);
  });

  it('retries network errors, 502, 503, 429 with Retry-After and a batch in progress elsewhere; nothing else', () => {
    const d = DEFAULT_RETRY;
    expect(retryDelayOf(new TypeError('fetch failed'), 0, d)).toBeGreaterThan(0);
    expect(retryDelayOf(new DshError('INTERNAL', 'x', { status: 502 }), 0, d)).toBeGreaterThan(0);
    expect(retryDelayOf(new DshError('RATE_LIMITED', 'x', { status: 429, retryAfterS: 2 }), 0, d)).toBe(2000);
    expect(retryDelayOf(new DshError('RATE_LIMITED', 'x', { status: 429 }), 0, d)).toBeUndefined();
    const busy = new DshError('IDEMPOTENCY_KEY_IN_PROGRESS', 'x', { status: 409, retryAfterS: 1 });
    expect(retryDelayOf(busy, 0, d)).toBe(1000);
    expect(retryDelayOf(new DshError('CONFLICT', 'x', { status: 409 }), 0, d)).toBeUndefined();
    expect(retryDelayOf(new DshError('INTERNAL', 'x', { status: 500 }), 0, d)).toBeUndefined();
    expect(retryDelayOf(new DshError('IDEMPOTENCY_KEY_REUSED', 'x', { status: 422 }), 0, d)).toBeUndefined();
    expect(retryDelayOf(new Error('x'), 0, d)).toBeUndefined();
    // Exponential, capped.
    expect(retryDelayOf(new TypeError('x'), 10, d)).toBeLessThanOrEqual(d.maxDelayMs);
  });
});
