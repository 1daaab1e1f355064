// Connection exhaustion without a key (issue 11): connections that never send a request, or never
// finish one, cannot lock the tenants out; they are closed soon; and one tenant cannot take every
// connection either. The caps are scaled down here (40 connections, 8 of them reserved).
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../helpers/until.ts';
import { type Harness, METRICS_KEY, startHarness } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    config: {
      maxConnections: 40,
      connectionReserve: 8,
      firstByteTimeoutMs: 1000,
      headersTimeoutMs: 1500,
      keepAliveTimeoutMs: 3000,
      tenantConnections: 4,
    },
  });
});
afterAll(() => h?.close());

interface Raw {
  socket: net.Socket;
  closed: Promise<void>;
  /** Everything the server sent. */
  received: () => string;
}

const open = (): Promise<Raw> =>
  new Promise((resolve, reject) => {
    const socket = net.connect(h.server.port, '127.0.0.1');
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      received += d;
    });
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    socket.once('connect', () => resolve({ socket, closed, received: () => received }));
    socket.once('error', reject);
  });

/** One GET on a new connection; resolves with the status once the response head arrived. */
const get = async (path: string, key?: string, keepAlive = false): Promise<{ status: number; raw: Raw }> => {
  const raw = await open();
  raw.socket.write(
    `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${key ? `Authorization: Bearer ${key}\r\n` : ''}${
      keepAlive ? '' : 'Connection: close\r\n'
    }\r\n`,
  );
  for (const end = Date.now() + 5000; ; ) {
    const m = /^HTTP\/1\.1 (\d{3})[\s\S]*?\r\n\r\n/.exec(raw.received());
    if (m) return { status: Number(m[1]), raw };
    if (raw.socket.destroyed || Date.now() > end)
      throw new Error(`no answer to GET ${path}: ${JSON.stringify(raw.received())}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

/** A hang guard: `done` must settle within `ms` (generous; the timeouts under test are 1-3 s). */
const within = async (ms: number, what: string, done: Promise<unknown>): Promise<void> => {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  try {
    await Promise.race([done, late]);
  } finally {
    clearTimeout(timer);
  }
};

const gauge = async (name: string): Promise<number> => {
  const { raw } = await get('/metrics', METRICS_KEY);
  await raw.closed;
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(raw.received());
  if (!m) throw new Error(`no gauge ${name}`);
  return Number(m[1]);
};

describe('connections without a key', () => {
  it('100 silent connections do not lock the tenants out, and are closed soon', async () => {
    const idle = await Promise.all(Array.from({ length: 100 }, () => open()));
    for (let i = 0; i < 10; i++) {
      const { status, raw } = await get('/v1/agents', i % 2 ? h.keyA : h.keyB);
      expect(status).toBe(200);
      raw.socket.destroy();
    }
    expect(await gauge('dsh_connections_unauthenticated')).toBeLessThanOrEqual(32);
    expect(await gauge('dsh_connections_evicted')).toBeGreaterThanOrEqual(100 - 32);
    // The rest are closed for sending nothing within the first-byte timeout (1 s).
    await within(20_000, 'closing the silent connections', Promise.all(idle.map((s) => s.closed)));
    expect(await gauge('dsh_connections_silent')).toBeGreaterThan(0);
  });

  it('a connection that never finishes its request head is answered 408 and closed', async () => {
    const slow = await Promise.all(
      Array.from({ length: 5 }, async () => {
        const raw = await open();
        raw.socket.write('GET /v1/agents HTTP/1.1\r\nHost: 127.0.0.1\r\n');
        return raw;
      }),
    );
    const started = Date.now();
    await within(20_000, 'closing the slow connections', Promise.all(slow.map((s) => s.closed)));
    // Not before the head had its time (1.5 s): a lower bound, which load only lengthens.
    expect(Date.now() - started).toBeGreaterThanOrEqual(500);
    for (const s of slow) expect(s.received()).toMatch(/^HTTP\/1\.1 408/);
  });
});

describe('connections with a key', () => {
  it('one tenant holds at most its cap of connections; others still get theirs', async () => {
    const key = (await h.server.store.tenants.createTenant('tenant-c')).apiKey;
    const held = [];
    for (let i = 0; i < 4; i++) {
      const r = await get('/v1/agents', key, true);
      expect(r.status).toBe(200);
      held.push(r.raw);
    }
    const refused = await get('/v1/agents', key, true);
    expect(refused.status).toBe(429);
    await within(20_000, 'closing the refused connection', refused.raw.closed);
    const other = await get('/v1/agents', h.keyB);
    expect(other.status).toBe(200);
    // Releasing one gives the tenant its slot back.
    held[0]?.socket.destroy();
    await held[0]?.closed;
    // The server hears of the close a moment later; until then the tenant is still at its cap.
    await until(async () => (await get('/v1/agents', key)).status === 200, { what: 'the slot back' });
    for (const r of held) r.socket.destroy();
  });
});
