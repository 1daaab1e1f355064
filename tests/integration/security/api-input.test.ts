// Hostile bytes at the HTTP layer of a real server on 127.0.0.1 (raw sockets where fetch would
// tidy the request up). Guarantee: every malformed, oversized, poisoned, slow or unexpected input
// gets a clear 4xx with an error code (or the connection is closed within the server's timeouts),
// no object prototype in the server changes, and the service keeps serving everyone.
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../helpers/until.ts';
import { type Harness, type Loose, METRICS_KEY, startHarness } from './harness.ts';

let h: Harness;
let agent: string;
let pendingId: string;

const stillServing = async () => {
  expect((await h.http(undefined, 'GET', '/v1/health')).status).toBe(200);
  expect((await h.http(h.keyB, 'GET', '/v1/agents')).status).toBe(200);
};

/** True once `raw` holds a whole response: its head and the body its head announces. */
const wholeResponse = (raw: string): boolean => {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return false;
  const head = raw.slice(0, end);
  const length = /\r\ncontent-length: *(\d+)/i.exec(head);
  if (length) return raw.length - end - 4 >= Number(length[1]); // latin1: one char per byte
  if (/\r\ntransfer-encoding: *chunked/i.test(head)) return raw.endsWith('0\r\n\r\n');
  return false; // the body ends when the server closes
};

/** Sends raw bytes; resolves with the server's answer once it is whole or closed (or a hang guard passed). */
const rawRequest = (bytes: Buffer, waitMs = 10_000): Promise<string> =>
  new Promise((resolve) => {
    const { port } = h.server;
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(Buffer.concat(chunks).toString('latin1'));
    };
    const timer = setTimeout(done, waitMs);
    socket.on('data', (c) => {
      chunks.push(c);
      if (wholeResponse(Buffer.concat(chunks).toString('latin1'))) done();
    });
    socket.on('error', done);
    socket.on('close', done);
    socket.write(bytes);
  });

const statusOf = (raw: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0);

const jsonRequest = (method: string, path: string, body: Buffer, key = h.keyA): Buffer =>
  Buffer.concat([
    Buffer.from(
      `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
    ),
    body,
  ]);

const JSON_ROUTES = (): [string, string][] => [
  ['POST', '/v1/agents'],
  ['POST', `/v1/agents/${agent}/calls`],
  ['POST', `/v1/agents/${agent}/remote-tools`],
  ['POST', `/v1/agents/${agent}/requests/${pendingId}`],
];

beforeAll(async () => {
  h = await startHarness();
  agent = await h.agent(h.keyA, {
    policy: { ask: ['write'] },
  });
  void h
    .calls(h.keyA, agent, [['ask', 'write', { file_path: 'x.txt', content: 'x' }]])
    .catch(() => undefined);
  for (let i = 0; i < 500 && pendingId === undefined; i++) {
    const res = await h.http(h.keyA, 'GET', `/v1/agents/${agent}/requests?state=pending`);
    pendingId = res.json.requests[0]?.id;
    if (pendingId === undefined) await new Promise((r) => setTimeout(r, 20));
  }
  expect(pendingId).toBeDefined();
});

afterAll(async () => {
  await h?.close();
});

describe('hostile HTTP input', () => {
  it('malformed JSON on every JSON route is 400 MALFORMED_JSON', async () => {
    for (const [method, path] of JSON_ROUTES()) {
      for (const body of ['{"calls":', '{]', "{'a':1}", '{"a":1}}', 'NaN', '\u0000', '{"a":01}']) {
        const res = await h.http(h.keyA, method, path, body, { 'Content-Type': 'application/json' });
        expect(res.status, `${path} ${body}`).toBe(400);
        expect(res.json.error.code, `${path} ${body}`).toBe('MALFORMED_JSON');
      }
    }
    await stillServing();
  });

  it('100 000 levels of nesting on every JSON route is a clear 4xx, and the service keeps serving', async () => {
    const depth = 100_000;
    const arrays = `${'['.repeat(depth)}${']'.repeat(depth)}`;
    const objects = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    for (const [method, path] of JSON_ROUTES()) {
      for (const deep of [arrays, objects]) {
        const bodies = [
          deep,
          `{"calls":[{"id":"d","name":"write","arguments":${deep}}]}`,
          `{"tools":[{"name":"deep","description":"d","parameters":${deep}}]}`,
          `{"allow":true,"reason":${deep}}`,
          `{"result":${deep}}`,
          `{"policy":{"rules":[${deep}]}}`,
        ];
        for (const body of bodies) {
          const res = await h.http(h.keyA, method, path, body, { 'Content-Type': 'application/json' });
          expect(res.status, `${path} ${body.slice(0, 40)}`).toBeGreaterThanOrEqual(400);
          expect(res.status, `${path} ${body.slice(0, 40)}`).toBeLessThan(500);
          expect(typeof res.json?.error?.code).toBe('string');
        }
      }
    }
    await stillServing();
  });

  it('prototype-poisoning keys in every body never reach an object prototype', async () => {
    const poison = [
      '{"__proto__":{"polluted":"yes"}}',
      '{"constructor":{"prototype":{"polluted":"yes"}}}',
      '{"preset":"standard","__proto__":{"polluted":"yes"},"policy":{"__proto__":{"polluted":"yes"}}}',
      '{"calls":[{"id":"p","name":"bash","arguments":{"__proto__":{"polluted":"yes"},"command":"echo hi","description":"x"},"__proto__":{"polluted":"yes"}}]}',
      '{"tools":[{"name":"pp","description":"d","parameters":{"type":"object","__proto__":{"polluted":"yes"}}}]}',
      '{"allow":false,"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}}}',
    ];
    for (const [method, path] of JSON_ROUTES()) {
      for (const body of poison) {
        const res = await h.http(h.keyA, method, path, body, { 'Content-Type': 'application/json' });
        expect(res.status, `${path} ${body}`).toBeLessThan(500);
      }
    }
    // The server runs in this process: no prototype of ours changed.
    expect(({} as Loose).polluted).toBeUndefined();
    expect(([] as Loose).polluted).toBeUndefined();
    expect((Object.prototype as Loose).polluted).toBeUndefined();
    await stillServing();
  });

  it('unknown fields are 400 BAD_REQUEST naming them', async () => {
    const cases: [string, string, unknown][] = [
      ['POST', '/v1/agents', { preset: 'standard', isAdmin: true }],
      ['POST', '/v1/agents', { sandbox: { privileged: true } }],
      ['POST', '/v1/agents', { sandbox: { network: 'host' } }],
      [
        'POST',
        `/v1/agents/${agent}/calls`,
        { calls: [{ id: 'a', name: 'bash', arguments: {}, tenantId: 'x' }] },
      ],
      [
        'POST',
        `/v1/agents/${agent}/calls`,
        { calls: [{ id: 'a', name: 'read', arguments: {} }], sudo: true },
      ],
      [
        'POST',
        `/v1/agents/${agent}/remote-tools`,
        { tools: [{ name: 'x', description: 'x', parameters: {}, exec: 'rm' }] },
      ],
    ];
    for (const [method, path, body] of cases) {
      const res = await h.http(h.keyA, method, path, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.error.code).toBe('BAD_REQUEST');
    }
    await stillServing();
  });

  it('invalid UTF-8 in a JSON body is 400 MALFORMED_JSON, never silently rewritten', async () => {
    const bad = [
      Buffer.concat([Buffer.from('{"preset":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]),
      Buffer.concat([
        Buffer.from('{"calls":[{"id":"u","name":"write","arguments":{"file_path":"'),
        Buffer.from([0xc0, 0xaf, 0xed, 0xa0, 0x80]),
        Buffer.from('.txt","content":"x"}}]}'),
      ]),
    ];
    for (const [i, body] of bad.entries()) {
      const path = i === 0 ? '/v1/agents' : `/v1/agents/${agent}/calls`;
      const raw = await rawRequest(jsonRequest('POST', path, body));
      expect(statusOf(raw), raw.slice(0, 200)).toBe(400);
      expect(raw).toContain('MALFORMED_JSON');
    }
    await stillServing();
  });

  it('invalid percent-encoding or UTF-8 in the query is a clear 4xx', async () => {
    for (const q of ['%ff', '%c0%ae%c0%ae', '%', '%zz', '%00', '%ed%a0%80']) {
      const res = await h.http(h.keyA, 'GET', `/v1/agents/${agent}/files?path=${q}`);
      expect(res.status, q).toBeGreaterThanOrEqual(400);
      expect(res.status, q).toBeLessThan(500);
      expect(typeof res.json?.error?.code).toBe('string');
    }
    await stillServing();
  });

  it('huge and malformed headers are refused without hurting the service', async () => {
    const huge = await rawRequest(
      Buffer.from(
        `GET /v1/agents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${h.keyA}\r\nX-Big: ${'a'.repeat(200_000)}\r\n\r\n`,
      ),
    );
    expect([0, 431]).toContain(statusOf(huge));
    const many = await rawRequest(
      Buffer.from(
        `GET /v1/agents HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 5000 }, (_, i) => `X-H${i}: v`).join('\r\n')}\r\n\r\n`,
      ),
    );
    expect([0, 400, 431]).toContain(statusOf(many));
    const bigAuth = await h.http(`dsk_${'A'.repeat(8000)}`, 'GET', '/v1/agents');
    expect(bigAuth.status).toBe(401);
    const badLength = await rawRequest(
      Buffer.from(
        `POST /v1/agents HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\nAuthorization: Bearer ${h.keyA}\r\n\r\n`,
      ),
    );
    expect(statusOf(badLength)).toBe(400);
    const smuggle = await rawRequest(
      Buffer.from(
        `POST /v1/agents HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\nAuthorization: Bearer ${h.keyA}\r\n\r\n0\r\n\r\n`,
      ),
    );
    expect([0, 400]).toContain(statusOf(smuggle));
    await stillServing();
  });

  it('a JSON body over the limit is 413 PAYLOAD_TOO_LARGE, declared or streamed', async () => {
    const big = Buffer.from(
      JSON.stringify({
        calls: [
          { id: 'b', name: 'write', arguments: { file_path: 'b', content: 'x'.repeat(2 * 1024 * 1024) } },
        ],
      }),
    );
    const declared = await rawRequest(jsonRequest('POST', `/v1/agents/${agent}/calls`, big));
    expect(statusOf(declared)).toBe(413);
    const chunks = [];
    for (let i = 0; i < big.length; i += 64 * 1024) {
      const part = big.subarray(i, i + 64 * 1024);
      chunks.push(Buffer.from(`${part.length.toString(16)}\r\n`), part, Buffer.from('\r\n'));
    }
    const chunked = await rawRequest(
      Buffer.concat([
        Buffer.from(
          `POST /v1/agents/${agent}/calls HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${h.keyA}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`,
        ),
        ...chunks,
        Buffer.from('0\r\n\r\n'),
      ]),
    );
    expect(statusOf(chunked)).toBe(413);
    expect(chunked).toContain('PAYLOAD_TOO_LARGE');
    await stillServing();
  });

  it('slowloris clients (trickled headers, partial bodies) are cut off by the server timeouts while everyone else is served', async () => {
    const sockets: { socket: Socket; closedAt?: number }[] = [];
    const started = Date.now();
    const open = (first: string, drip: string) => {
      const socket = connect(h.server.port, '127.0.0.1');
      const entry: { socket: Socket; closedAt?: number } = { socket };
      socket.on('close', () => {
        entry.closedAt = Date.now();
        clearInterval(timer);
      });
      socket.on('error', () => undefined);
      socket.write(first);
      const timer = setInterval(() => {
        if (!socket.destroyed) socket.write(drip);
      }, 2000);
      sockets.push(entry);
    };
    for (let i = 0; i < 5; i++) open('GET /v1/agents HTTP/1.1\r\nHost: x\r\n', `X-Slow-${i}: a\r\n`);
    for (let i = 0; i < 5; i++)
      open(
        `POST /v1/agents/${agent}/calls HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${h.keyA}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"calls":`,
        ' ',
      );
    // All ten are open on the server (with the request asking for the gauge) before the others ask.
    await until(
      async () =>
        Number(
          /^dsh_connections_open (\d+)$/m.exec((await h.http(METRICS_KEY, 'GET', '/metrics')).text)?.[1] ?? 0,
        ) > 10,
      { what: 'the slow connections to be open' },
    );
    await stillServing();
    while (sockets.some((s) => s.closedAt === undefined) && Date.now() - started < 140_000)
      await new Promise((r) => setTimeout(r, 500));
    for (const s of sockets) s.socket.destroy();
    expect(sockets.every((s) => s.closedAt !== undefined)).toBe(true);
    await stillServing();
    // A body cut off by the timeout is the client's fault, never an INTERNAL error.
    const metrics = await h.http(METRICS_KEY, 'GET', '/metrics');
    expect(metrics.text).not.toMatch(/dsh_api_errors_total\{[^}]*INTERNAL/);
  }, 170_000);
});
