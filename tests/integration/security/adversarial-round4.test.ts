// Round four of the adversarial pass, through the public HTTP API of a real service on 127.0.0.1
// (real Docker, real isolates, a libsql file store), as a hostile tenant with a valid key. Each
// case was a finding of this round: it failed before its fix.
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORED_ANSWER_MAX } from '../../../host/api/idempotency.ts';
import { BATCH_ANSWER_MAX } from '../../../host/tools/answer-budget.ts';
import { until } from '../../helpers/until.ts';
import { readSse } from '../../unit/api/sse.ts';
import { adminTenant, type Harness, type Loose, startHarness } from './harness.ts';

const ADMIN = 'admin-key-for-the-adversarial-round4-0123456789';
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ config: { adminKey: ADMIN, authFailures: 1000 } });
});
afterAll(() => h?.close());

/** Resolves 'ended' when `reading` ends, 'still open' after a guard against a hang. */
const endsWithin = (reading: Promise<unknown>, ms: number) =>
  Promise.race([reading.then(() => 'ended'), new Promise((r) => setTimeout(() => r('still open'), ms))]);

/** A 2025-era MCP request to the agent's endpoint (its answer a resumable SSE stream). */
const mcp = (key: string, agent: string, init: { body?: unknown; headers?: Record<string, string> }) =>
  fetch(`${h.server.url}/v1/agents/${agent}/mcp`, {
    method: init.body === undefined ? 'GET' : 'POST',
    headers: {
      Authorization: `Bearer ${key}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2025-11-25',
      ...init.headers,
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });

describe('MCP answers resumed with Last-Event-ID', () => {
  it('a resumed answer ends when the key that resumed it is revoked, like every other stream', async () => {
    const t = await adminTenant(h, ADMIN, 'resume-revoke');
    const agent = await h.agent(t.key, { preset: 'standard' });
    const reg = await h.http(t.key, 'POST', `/v1/agents/${agent}/remote-tools`, {
      tools: [{ name: 'wait_for_me', description: 'Waits for the client.', parameters: { type: 'object' } }],
    });
    expect(reg.status, reg.text).toBe(200);
    const second = await h.http(t.key, 'POST', '/v1/keys', { name: 'resumer' });
    expect(second.status).toBe(201);
    const key = second.json.apiKey as string;
    // A call whose answer waits on the client; its first connection reads the priming event and goes.
    const first = await mcp(key, agent, {
      body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'wait_for_me', arguments: {} } },
    });
    expect(first.headers.get('content-type')).toContain('text/event-stream');
    const reader = (first.body as ReadableStream<Uint8Array>).getReader();
    const priming = new TextDecoder().decode((await reader.read()).value);
    const primingId = /^id: (\S+)$/m.exec(priming)?.[1] ?? '';
    expect(primingId).toMatch(/_0$/);
    await reader.cancel();
    const resumed = await mcp(key, agent, { headers: { 'Last-Event-ID': primingId } });
    expect(resumed.status).toBe(200);
    const reading = readSse(resumed.body as ReadableStream<Uint8Array>);
    expect((await h.http(t.key, 'DELETE', `/v1/keys/${second.json.id}`)).status).toBe(204);
    expect((await h.http(key, 'GET', '/v1/agents')).status).toBe(401);
    expect(await endsWithin(reading, 5000)).toBe('ended');
    // The answer that comes after the revocation is not sent to it.
    const pending = await until(async () => {
      const res = await h.http(t.key, 'GET', `/v1/agents/${agent}/requests?state=pending`);
      return res.json.requests[0]?.id as string | undefined;
    });
    await h.http(t.key, 'POST', `/v1/agents/${agent}/requests/${pending}`, { result: 'after-revocation' });
    expect(JSON.stringify(await reading)).not.toContain('after-revocation');
  });
});

/** The JSON-RPC error of an MCP answer, whether sent as JSON or as an SSE event. */
const rpcErrorOf = async (res: Response): Promise<{ code: number; message: string } | undefined> => {
  const text = await res.text();
  const json = (res.headers.get('content-type') ?? '').includes('text/event-stream')
    ? /^data: (\{.*\})$/m.exec(text)?.[1]
    : text;
  return JSON.parse(json ?? 'null')?.error;
};

describe('MCP requests with invalid params', () => {
  it('are answered -32602 Invalid params naming the field, never -32603 Internal error', async () => {
    const agent = await h.agent(h.keyA, { preset: 'standard' });
    const client = { name: 'x', version: '1' };
    const bad: [string, unknown][] = [
      ['initialize', { protocolVersion: { x: 1 }, capabilities: {}, clientInfo: client }],
      ['initialize', { protocolVersion: '2025-06-18', capabilities: 5, clientInfo: client }],
      ['initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: 'x' }],
      ['initialize', {}],
      ['tools/list', { cursor: { a: 1 } }],
      ['tools/list', { cursor: 5 }],
    ];
    const wrong: string[] = [];
    for (const era of ['2025-11-25', '2025-06-18', '2025-03-26', '2026-07-28'])
      for (const [method, params] of bad) {
        // 2026-07-28 has no initialize: the SDK refuses it as a handshake of another era (-32020).
        if (era === '2026-07-28' && method === 'initialize') continue;
        const res = await mcp(h.keyA, agent, {
          body: { jsonrpc: '2.0', id: 3, method, params },
          headers: { 'MCP-Protocol-Version': era },
        });
        const error = await rpcErrorOf(res);
        // Refused before it ran, with what to fix (no raw validator dump).
        if (error?.code !== -32602 || error.message.startsWith('['))
          wrong.push(`${era} ${method} ${JSON.stringify(params)} -> ${res.status} ${JSON.stringify(error)}`);
      }
    expect(wrong).toEqual([]);
    // A valid request still gets its answer.
    const list = await mcp(h.keyA, agent, {
      body: { jsonrpc: '2.0', id: 4, method: 'tools/list', params: {} },
    });
    expect(await list.text()).toContain('"tools"');
  });
});

describe("another tenant's MCP answers kept for a resume", () => {
  it('are not pushed out by a flood of short answers of one tenant', async () => {
    const a = await adminTenant(h, ADMIN, 'resume-kept-a');
    const b = await adminTenant(h, ADMIN, 'resume-kept-b');
    const agentA = await h.agent(a.key, { preset: 'standard' });
    const agentB = await h.agent(b.key, { preset: 'standard' });
    const reg = await h.http(a.key, 'POST', `/v1/agents/${agentA}/remote-tools`, {
      tools: [{ name: 'wait_for_me', description: 'Waits for the client.', parameters: { type: 'object' } }],
    });
    expect(reg.status, reg.text).toBe(200);
    // A's call outlives its connection, and its answer comes while nobody listens.
    const first = await mcp(a.key, agentA, {
      body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'wait_for_me', arguments: {} } },
    });
    const reader = (first.body as ReadableStream<Uint8Array>).getReader();
    const primingId = /^id: (\S+)$/m.exec(new TextDecoder().decode((await reader.read()).value))?.[1] ?? '';
    await reader.cancel();
    const pending = await until(async () => {
      const res = await h.http(a.key, 'GET', `/v1/agents/${agentA}/requests?state=pending`);
      return res.json.requests[0]?.id as string | undefined;
    });
    await h.http(a.key, 'POST', `/v1/agents/${agentA}/requests/${pending}`, { result: 'kept-for-a' });
    // B's short answers, each kept for its own resume: more of them than the service keeps in all.
    for (let round = 0; round < 40; round++)
      await Promise.all(
        Array.from({ length: 16 }, async (_, i) => {
          const res = await mcp(b.key, agentB, {
            body: { jsonrpc: '2.0', id: round * 16 + i, method: 'ping' },
          });
          expect(res.status).toBe(200);
          await res.text();
        }),
      );
    // A's client comes back within the minute answers are kept: its answer is there.
    const resumed = await mcp(a.key, agentA, { headers: { 'Last-Event-ID': primingId } });
    expect(resumed.status).toBe(200);
    expect(await resumed.text()).toContain('kept-for-a');
  });
});

describe('bodies in a content coding the service does not decode', () => {
  it('are refused with BAD_REQUEST naming Content-Encoding, never stored or parsed as they are', async () => {
    const agent = await h.agent(h.keyA, { preset: 'standard' });
    const zipped = gzipSync(Buffer.from('hello, plain text'));
    const upload = await h.http(h.keyA, 'PUT', `/v1/agents/${agent}/files?path=zipped.txt`, zipped, {
      'Content-Type': 'application/octet-stream',
      'Content-Encoding': 'gzip',
    });
    expect([upload.status, upload.json?.error?.code]).toEqual([400, 'BAD_REQUEST']);
    expect(upload.json.error.message).toContain('Content-Encoding');
    expect((await h.http(h.keyA, 'GET', `/v1/agents/${agent}/files?path=zipped.txt`)).status).toBe(404);
    const json = gzipSync(Buffer.from('{"calls":[{"id":"a","name":"read","arguments":{"file_path":"x"}}]}'));
    for (const coding of ['gzip', 'br', 'deflate, gzip', 'x-unknown']) {
      const res = await h.http(h.keyA, 'POST', `/v1/agents/${agent}/calls`, new Uint8Array(json), {
        'Content-Type': 'application/json',
        'Content-Encoding': coding,
      });
      expect([res.status, res.json?.error?.code], coding).toEqual([400, 'BAD_REQUEST']);
    }
    // identity is no coding at all.
    const plain = await h.http(h.keyA, 'PUT', `/v1/agents/${agent}/files?path=plain.txt`, 'plain', {
      'Content-Type': 'application/octet-stream',
      'Content-Encoding': 'identity',
    });
    expect(plain.status, plain.text).toBe(200);
  });
});

describe('answers kept for an Idempotency-Key', () => {
  it("take no more room than the log's budget allows: a large answer is replayed from the log, not stored again", async () => {
    const agent = await h.agent(h.keyA, { preset: 'standard' });
    // One file of about 1 MiB, printed by each of 16 calls: an answer of about 16 MiB, which the log
    // holds once (its large values are stored once per tenant).
    await h.bash(h.keyA, agent, 'head -c 780000 /dev/urandom | base64 -w 200 > big.txt');
    const calls = Array.from({ length: 16 }, (_, i) => ({
      id: `c${i}`,
      name: 'bash',
      arguments: { command: 'cat big.txt', description: 'print' },
    }));
    const send = () =>
      h.http(h.keyA, 'POST', `/v1/agents/${agent}/calls`, { calls }, { 'Idempotency-Key': 'big' });
    const first = await send();
    expect(first.status).toBe(200);
    // Over what is stored for a key (its 16 outputs: within the batch's answer budget, 8 Mi characters).
    expect(first.buf.length).toBeGreaterThan(STORED_ANSWER_MAX);
    const tenantId = (await h.http(h.keyA, 'GET', '/v1/keys')).json.keys[0].tenantId as string;
    const row = await h.server.store.callBatches.get({ tenantId, agentId: agent, key: 'big' });
    expect(row?.state).toBe('done');
    // What the store keeps for the key is small…
    expect(row?.state === 'done' ? row.outcome.body.length : Number.POSITIVE_INFINITY).toBeLessThan(
      1024 * 1024,
    );
    // …and the retry still gets the first answer's results, marked replayed.
    const replay = await send();
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    const texts = (r: Loose) =>
      (r.json.results as Loose[]).map((x) => [x.id, x.ok, JSON.stringify(x.content)]);
    expect(texts(replay)).toEqual(texts(first));
  });
});

describe("one tenant's large answers and the control plane's memory", () => {
  // Round 4 found: a batch's answer was built whole in the control plane's memory, bounded only by
  // 64 calls x the sandbox's 1 MiB of output per call. Measured on this harness (libsql, one agent,
  // 64 bash calls each printing 1.1 MB): one batch raised the process's heap plus external memory
  // from 54 MB to 466 MB (a ~6x amplification of its 69 MB answer: output buffers, results, log
  // payloads, the JSON answer, its UTF-8 bytes); 4 at once reached 1,197 MB, and a tenant's 16
  // request slots at once would pass V8's ~4.2 GB heap limit and end the process. Since then a
  // batch answers with at most BATCH_ANSWER_MAX characters of outputs (host/tools/answer-budget.ts).
  it('16 concurrent batches of 16 large outputs keep the heap under 1 GiB, and the service serves', async () => {
    const agent = await h.agent(h.keyA, { preset: 'standard' });
    const calls = Array.from({ length: 16 }, (_, i) => ({
      id: `b${i}`,
      name: 'bash',
      arguments: { command: "head -c 1100000 /dev/zero | tr '\\0' x", description: 'print' },
    }));
    let peak = 0;
    const sample = setInterval(() => {
      const m = process.memoryUsage();
      peak = Math.max(peak, m.heapUsed + m.external);
    }, 20);
    const base = process.memoryUsage();
    const answers = await Promise.all(
      Array.from({ length: 16 }, () => h.http(h.keyA, 'POST', `/v1/agents/${agent}/calls`, { calls })),
    );
    clearInterval(sample);
    expect(answers.every((a) => a.status < 500)).toBe(true);
    // Each answer within the budget: the outputs past it left out, with a note where they are.
    for (const answer of answers) expect(answer.buf.length).toBeLessThan(2 * BATCH_ANSWER_MAX);
    expect(JSON.stringify(answers[0]?.json.results.at(-1).content)).toContain('left out of this answer');
    expect(peak - (base.heapUsed + base.external)).toBeLessThan(1024 * 1024 * 1024);
    expect((await h.http(h.keyB, 'GET', '/v1/agents')).status).toBe(200);
  });
});
