// Hostile and careless input: each answer is a clear 4xx with a stable code, and the service
// keeps serving afterwards.
import { buffer } from 'node:stream/consumers';
import { pack } from 'tar-stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseJson } from '../../../host/api/body.ts';
import { until } from '../../helpers/until.ts';
import { type Api, type Loose, makeApi } from './harness.ts';

let api: Api;
beforeEach(async () => {
  api = await makeApi({ maxJsonBytes: 4096, maxUploadBytes: 8192, tenantConcurrency: 2 });
});
afterEach(async () => {
  await api.close();
});

const stillServing = async () => {
  const res = await api.request(api.keyA, 'GET', '/v1/agents');
  expect(res.status).toBe(200);
};

describe('bad input', () => {
  it('a revoked key is refused from the next request on', async () => {
    const { store } = api;
    const tenant = await store.tenants.createTenant('revoked-soon');
    expect((await api.request(tenant.apiKey, 'GET', '/v1/agents')).status).toBe(200);
    expect((await api.request(tenant.apiKey, 'GET', '/v1/agents')).status).toBe(200);
    await store.tenants.revokeKey(tenant.keyId);
    const refused = await api.request(tenant.apiKey, 'GET', '/v1/agents');
    expect(refused.status).toBe(401);
    expect(refused.json?.error?.code).toBe('UNAUTHORIZED');
  });

  it('malformed JSON is 400 MALFORMED_JSON', async () => {
    for (const body of ['{"preset":', 'nope', '{"a":1}}', '\u0000']) {
      const res = await api.request(api.keyA, 'POST', '/v1/agents', body, {
        'Content-Type': 'application/json',
      });
      expect(res.status, body).toBe(400);
      expect(res.json.error.code).toBe('MALFORMED_JSON');
    }
    const agent = await api.createAgent(api.keyA);
    const empty = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/calls`, '', {
      'Content-Type': 'application/json',
    });
    expect(empty.json.error.code).toBe('MALFORMED_JSON');
    await stillServing();
  });

  it('wrong types are 400 BAD_REQUEST naming the issue paths', async () => {
    const res = await api.request(api.keyA, 'POST', '/v1/agents', {
      preset: 'everything',
      restrict: { allow: [1] },
      extra: true,
    });
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe('BAD_REQUEST');
    expect(res.json.error.message).toContain('preset');
    const agent = await api.createAgent(api.keyA);
    const calls = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/calls`, {
      calls: [{ id: 5, name: 'read' }],
    });
    expect(calls.status).toBe(400);
    expect(calls.json.error.message).toContain('calls.0.id');
    const empty = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/calls`, { calls: [] });
    expect(empty.status).toBe(400);
    const wrongType = await api.request(api.keyA, 'POST', '/v1/agents', 'preset=code', {
      'Content-Type': 'text/plain',
    });
    expect(wrongType.status).toBe(400);
    const badQuery = await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/events?after=-1`);
    expect(badQuery.status).toBe(400);
    await stillServing();
  });

  it('oversized bodies are 413 PAYLOAD_TOO_LARGE', async () => {
    const agent = await api.createAgent(api.keyA);
    const big = await api.call(api.keyA, agent.id, [
      { id: 'w', name: 'write', arguments: { file_path: 'a', content: 'x'.repeat(10_000) } },
    ]);
    expect(big.status).toBe(413);
    expect(big.json.error.code).toBe('PAYLOAD_TOO_LARGE');
    const upload = await api.request(
      api.keyA,
      'PUT',
      `/v1/agents/${agent.id}/files?path=big.bin`,
      new Uint8Array(9000),
      { 'Content-Type': 'application/octet-stream' },
    );
    expect(upload.status).toBe(413);
    await stillServing();
  });

  it('a streamed upload stops at the limit as it arrives and leaves the old file', async () => {
    const agent = await api.createAgent(api.keyA);
    const base = `/v1/agents/${agent.id}`;
    const H = { Authorization: `Bearer ${api.keyA}` };
    const p = pack();
    p.entry({ name: 'a' }, 'x');
    p.finalize();
    const oneEntry = (await buffer(p as never)).subarray(0, 1024); // header and padded content
    let pulled = 0;
    /** A chunked body (no Content-Length) of `n` chunks of 1 KiB: 'A's, or one small tar entry each. */
    const chunked = (n: number, chunk = new Uint8Array(1024).fill(65)) => ({
      method: 'PUT',
      headers: H,
      duplex: 'half',
      body: new ReadableStream<Uint8Array>({
        pull(controller) {
          if (pulled++ >= n) controller.close();
          else controller.enqueue(chunk);
        },
      }),
    });
    const ok = await api.app.request(`${base}/files?path=f.txt`, chunked(5) as RequestInit);
    expect(await ok.json()).toEqual({ path: '/workspace/f.txt', bytes: 5 * 1024 });
    pulled = 0;
    const tooBig = await api.app.request(`${base}/files?path=f.txt`, chunked(1000) as RequestInit);
    expect(tooBig.status).toBe(413);
    expect(pulled).toBeLessThan(20); // stopped at 8 KiB, not after reading 1 MiB
    expect((await api.request(api.keyA, 'GET', `${base}/files?path=f.txt`)).text).toBe('A'.repeat(5 * 1024));
    pulled = 0;
    const tarTooBig = await api.app.request(`${base}/archive?path=d`, chunked(1000, oneEntry) as RequestInit);
    expect(((await tarTooBig.json()) as Loose).error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(await api.request(api.keyA, 'GET', `${base}/files?path=d/a`)).toMatchObject({ status: 404 });
    expect(pulled).toBeLessThan(20);
    // Refused part-way but within the limit: the rest of the body is read and dropped before the
    // answer, so a client still sending gets the 400 rather than a connection closed under it.
    const link = pack();
    link.entry({ name: 'evil', type: 'symlink', linkname: '/etc/passwd' });
    link.finalize();
    const hostile = (await buffer(link as never)).subarray(0, 512);
    pulled = 0;
    const refused = await api.app.request(
      `${base}/archive?path=d`,
      chunked(4, Buffer.concat([hostile, Buffer.alloc(512)])) as RequestInit,
    );
    expect(((await refused.json()) as Loose).error.code).toBe('ARCHIVE_REJECTED');
    expect(pulled).toBe(5); // every chunk, then the end
    await stillServing();
  });

  it('traversal in every path field stays inside the workspace', async () => {
    const agent = await api.createAgent(api.keyA);
    const base = `/v1/agents/${agent.id}`;
    for (const path of ['../etc/passwd', '/etc/passwd', 'a/../../x', '/workspace/../etc']) {
      const q = encodeURIComponent(path);
      for (const [method, route, body] of [
        ['GET', `${base}/files?path=${q}`],
        ['PUT', `${base}/files?path=${q}`, new Uint8Array([1])],
        ['GET', `${base}/archive?path=${q}`],
      ] as [string, string, Uint8Array?][]) {
        const res = await api.request(api.keyA, method, route, body, {
          'Content-Type': 'application/octet-stream',
        });
        expect(res.status, `${method} ${path}`).toBe(400);
        expect(res.json.error.code).toBe('PATH_OUTSIDE_WORKSPACE');
      }
      const calls = await api.call(api.keyA, agent.id, [
        { id: 'r', name: 'read', arguments: { file_path: path } },
        { id: 'w', name: 'write', arguments: { file_path: path, content: 'x' } },
        { id: 'g', name: 'glob', arguments: { pattern: '*', path } },
        { id: 'e', name: 'edit', arguments: { file_path: path, old_string: 'a', new_string: 'b' } },
      ]);
      for (const result of calls.json.results) expect(result.ok, `${result.name} ${path}`).toBe(false);
    }
    for (const id of ['..', '..%2F..%2Fetc', 'agt_x%00']) {
      const res = await api.request(api.keyA, 'GET', `/v1/agents/${id}`);
      expect(res.status).toBe(404);
    }
    const nul = await api.request(api.keyA, 'GET', `${base}/files?path=a%00b`);
    expect(nul.status).toBe(400);
    await stillServing();
  });

  it('nesting too deep for the reviver is MALFORMED_JSON before anything walks it; strings do not count', async () => {
    await api.close();
    api = await makeApi({ maxJsonBytes: 1024 * 1024 });
    const deep = 100_000;
    for (const body of [
      `${'['.repeat(deep)}${']'.repeat(deep)}`,
      `{"preset":"standard","policy":${'{"a":'.repeat(deep)}1${'}'.repeat(deep)}}`,
    ]) {
      const res = await api.app.request('/v1/agents', {
        method: 'POST',
        headers: { Authorization: `Bearer ${api.keyA}`, 'Content-Type': 'application/json' },
        body,
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as Loose).error).toMatchObject({
        code: 'MALFORMED_JSON',
        message: 'The JSON nests arrays and objects too deeply.',
      });
    }
    // Brackets inside strings (escaped quotes too) are text, not nesting.
    const content = `\\"${'['.repeat(2000)}"{`;
    expect(parseJson(JSON.stringify({ content }))).toEqual({ content });
    // Deep but within the reviver's reach: parsed (past 512 levels through the reviver).
    expect(parseJson(`${'['.repeat(1000)}${']'.repeat(1000)}`)).toBeInstanceOf(Array);
    await stillServing();
  });

  it('prototype-poisoning keys never reach an object prototype', async () => {
    const parsed = parseJson(
      '{"__proto__":{"polluted":1},"a":{"constructor":{"prototype":{"polluted":2}}},"b":[{"__proto__":{"x":1}}]}',
    ) as Record<string, Loose>;
    expect(Object.hasOwn(parsed, '__proto__')).toBe(false);
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect(parsed.a).toEqual({});
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // Spelled with escapes, they are the same keys.
    const escaped = parseJson(
      '{"\\u005f_proto__":{"polluted":3},"c":{"constr\\u0075ctor":1,"ok":2}}',
    ) as Record<string, Loose>;
    expect(Object.hasOwn(escaped, '__proto__')).toBe(false);
    expect(escaped.c).toEqual({ ok: 2 });

    const agent = await api.createAgent(api.keyA);
    const raw = `{"calls":[{"id":"w","name":"write","arguments":{"file_path":"p.txt","content":"ok","__proto__":{"isAdmin":true}}}],"__proto__":{"polluted":true}}`;
    const res = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/calls`, raw, {
      'Content-Type': 'application/json',
    });
    expect(res.status).toBe(200);
    expect(res.json.results[0].ok).toBe(true);
    const events = await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/events`);
    expect(JSON.stringify(events.json)).not.toContain('isAdmin');
    const created = await api.request(
      api.keyA,
      'POST',
      '/v1/agents',
      '{"constructor":{"prototype":{"x":1}},"preset":"minimal"}',
      { 'Content-Type': 'application/json' },
    );
    expect(created.status).toBe(201);
    expect(({} as Record<string, unknown>).x).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    await stillServing();
  });

  it('unknown routes and methods are 404 with a code', async () => {
    const res = await api.request(api.keyA, 'GET', '/v1/nothing');
    expect(res.status).toBe(404);
    expect(res.json.error.code).toBe('NOT_FOUND');
  });
});

describe('limits', () => {
  it('a download holds its tenant slot until the client has read it', async () => {
    const one = await makeApi({ tenantConcurrency: 1 });
    const agent = await one.createAgent(one.keyA);
    const H = { Authorization: `Bearer ${one.keyA}` };
    const base = `/v1/agents/${agent.id}`;
    await one.app.request(`${base}/files?path=big.bin`, {
      method: 'PUT',
      headers: H,
      body: new Uint8Array(3 << 20),
    });
    const download = await one.app.request(`${base}/files?path=big.bin`, { headers: H });
    expect(download.status).toBe(200);
    // The body is still unread: the tenant's one slot is taken.
    expect((await one.app.request('/v1/agents', { headers: H })).status).toBe(429);
    expect((await download.arrayBuffer()).byteLength).toBe(3 << 20);
    expect((await one.app.request('/v1/agents', { headers: H })).status).toBe(200);
  });

  it('a slow upload is not cut by the request deadline (it would be answered 504 while still writing)', async () => {
    const slow = await makeApi({ requestTimeoutMs: 100 });
    const agent = await slow.createAgent(slow.keyA);
    let sent = 0;
    const res = await slow.app.request(`/v1/agents/${agent.id}/files?path=slow.txt`, {
      method: 'PUT',
      headers: { Authorization: `Bearer ${slow.keyA}` },
      duplex: 'half',
      body: new ReadableStream<Uint8Array>({
        async pull(controller) {
          // The client's pace, the behaviour under test: six chunks 60 ms apart outlast the deadline.
          await new Promise((r) => setTimeout(r, 60));
          if (sent++ >= 5) controller.close();
          else controller.enqueue(new Uint8Array(16).fill(66));
        },
      }),
    } as RequestInit);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ path: '/workspace/slow.txt', bytes: 80 });
    // Other routes keep the deadline.
    expect((await slow.request(slow.keyA, 'GET', '/v1/agents')).status).toBe(200);
  });

  it('per-tenant concurrency: the request over the limit is 429 RATE_LIMITED; other tenants are unaffected', async () => {
    const agent = await api.createAgent(api.keyA, {
      remoteTools: [{ name: 'hold', description: 'waits for the client', parameters: { type: 'object' } }],
    });
    const held = [
      api.call(api.keyA, agent.id, [{ id: 'h1', name: 'hold', arguments: {} }]),
      api.call(api.keyA, agent.id, [{ id: 'h2', name: 'hold', arguments: {} }]),
    ];
    const pending = await until(
      async () => {
        const held = await api.store.requests.list(agent.id, 'pending');
        return held.length === 2 && held;
      },
      { what: 'both calls to be held' },
    );
    const over = await api.request(api.keyA, 'GET', '/v1/agents');
    expect(over.status).toBe(429);
    expect(over.json.error.code).toBe('RATE_LIMITED');
    expect(over.headers.get('retry-after')).toBe('1');
    expect((await api.request(api.keyB, 'GET', '/v1/agents')).status).toBe(200);
    for (const r of pending) await api.store.requests.answer(r.id, { result: 'done' });
    for (const res of await Promise.all(held)) expect(res.json.results[0].ok).toBe(true);
    await stillServing();
  });

  it('shutdown: in-flight calls fail with SHUTTING_DOWN after the grace period, new requests get 503', async () => {
    const agent = await api.createAgent(api.keyA, {
      remoteTools: [{ name: 'hold', description: 'waits', parameters: { type: 'object' } }],
    });
    const call = api.call(api.keyA, agent.id, [{ id: 'h', name: 'hold', arguments: {} }]);
    await until(() => api.agents.inFlight() > 0, { what: 'the call to be in flight' });
    api.lifecycle.begin();
    await api.agents.close(50);
    const result = (await call).json.results[0];
    expect(result).toMatchObject({ ok: false, error: { code: 'SHUTTING_DOWN' } });
    expect((await api.request(api.keyA, 'GET', '/v1/health')).status).toBe(503);
  });
});
