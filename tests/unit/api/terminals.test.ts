// The terminal WebSocket route on a real loopback server (@hono/node-server and ws, as serve.ts
// runs it), over the memory provider with a terminals double whose timing the test controls: the
// sandbox's answers arrive in one burst (the race of issue 11: 68 sockets open against a cap of
// 32), and its writes are slower than the client sends (unbounded input buffering, issue 11).
// Output and keystrokes are activity for idle polling (host/idle-poll.ts); a quiet socket is not.
// tests/integration/api/terminals.test.ts runs the same route against real sandboxes.
import type { Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createConnectionGuard } from '../../../host/api/connections.ts';
import { createWebSocketServer, INPUT_LIMIT } from '../../../host/api/routes/terminals.ts';
import { createIdlePoll, NO_CONSTRAINT_US } from '../../../host/idle-poll.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import type { SandboxProvider, SandboxTerminals, TerminalInfo } from '../../../host/sandbox/types.ts';
import { recordingDevice } from '../../helpers/cpu-latency.ts';
import { until } from '../../helpers/until.ts';
import { ADMIN_KEY, type Api, makeApi } from './harness.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const info: TerminalInfo = {
  id: 't1',
  name: null,
  command: ['bash'],
  cwd: '/workspace',
  cols: 80,
  rows: 24,
  pid: 1,
  status: 'running',
  exitCode: null,
  signal: null,
  startedAt: 0,
  endedAt: null,
  startOffset: 0,
  endOffset: 0,
  busy: false,
};

/** Terminals whose list() waits for `release()` and whose writes take `writeMs` each. */
const terminalsDouble = (writeMs: number) => {
  let open!: () => void;
  let gate = new Promise<void>((r) => {
    open = r;
  });
  /** What the sandbox sends to the socket attached last (its output). */
  const state = { listed: 0, written: 0, attached: 0, output: (_data: Buffer, _offset: number): void => {} };
  const terms: SandboxTerminals = {
    open: async () => info,
    async list() {
      state.listed++;
      await gate;
      return [info];
    },
    async write(_id, data) {
      await sleep(writeMs);
      state.written += typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength;
    },
    read: async () => ({ ...info, data: Buffer.alloc(0), offset: 0, nextOffset: 0, dropped: 0 }),
    resize: async () => info,
    signal: async () => info,
    close: async () => info,
    attach: (_id, o) => {
      state.output = o.onData;
      state.attached++;
      return new Promise((resolve) =>
        o.signal?.addEventListener('abort', () => resolve(info), { once: true }),
      );
    },
  };
  const release = () => open();
  const block = () => {
    gate = new Promise<void>((r) => {
      open = r;
    });
  };
  return { terms, state, release, block };
};

let api: Api;
let server: Server;
let base: string;
let double: ReturnType<typeof terminalsDouble>;

const start = async (writeMs: number, activity?: () => void) => {
  double = terminalsDouble(writeMs);
  const memory = createMemoryProvider();
  const withTerms = <T extends object>(s: T | undefined) => s && { ...s, terminals: double.terms };
  const sandboxes: SandboxProvider = {
    ...memory,
    flags: { ...memory.flags, terminals: true },
    create: async (spec) => withTerms(await memory.create(spec)) as never,
    get: async (id) => withTerms(await memory.get(id)),
  };
  api = await makeApi(
    { tenantTerminals: 32 },
    { sandboxes, ...(activity === undefined ? {} : { app: { activity } }) },
  );
  server = await new Promise<Server>((resolve) => {
    const s = serve(
      {
        fetch: api.app.fetch,
        hostname: '127.0.0.1',
        port: 0,
        websocket: { server: createWebSocketServer() },
      },
      () => resolve(s as Server),
    ) as Server;
    // As serve.ts does: the connection guard wraps the upgrade listeners once they are installed.
    createConnectionGuard({ maxConnections: 1000, reserve: 10, firstByteMs: 10_000, perTenant: 1000 }).attach(
      s as Server,
    );
  });
  base = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

afterEach(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  await api.close();
});

const connect = (url: string, key: string) =>
  new Promise<WebSocket>((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { Authorization: `Bearer ${key}` } });
    ws.on('open', () => resolve(ws));
    ws.on('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.on('error', reject);
  });

const gauge = async (name: string): Promise<number> => {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec((await api.request(ADMIN_KEY, 'GET', '/metrics')).text);
  if (!m) throw new Error(`no gauge ${name}`);
  return Number(m[1]);
};

describe('terminal sockets', () => {
  it('the per-tenant cap holds when 60 connect at once and the sandbox answers in one burst', async () => {
    await start(0);
    const agent = await api.createAgent(api.keyA);
    await api.agents.sandbox(
      await api.agents.get((await api.store.tenants.verifyKey(api.keyA))!.id, agent.id),
    );
    const url = `${base}/v1/agents/${agent.id}/terminals/t1`;
    let refused = 0;
    const attempts = Array.from({ length: 60 }, () =>
      connect(url, api.keyA).then(
        (ws) => ({ ws, error: undefined }),
        (error: unknown) => {
          refused++;
          return { ws: undefined, error: String(error) };
        },
      ),
    );
    // Every attempt is either waiting for the sandbox or already refused; then it answers at once.
    await until(() => double.state.listed + refused === 60, { what: 'every attempt to wait or be refused' });
    double.release();
    const settled = await Promise.all(attempts);
    const open = settled.flatMap((s) => (s.ws ? [s.ws] : []));
    expect(open.length).toBe(32);
    expect(new Set(settled.flatMap((s) => (s.error ? [s.error] : [])))).toEqual(new Set(['Error: HTTP 429']));
    expect(await gauge('dsh_terminal_sockets_open')).toBe(32);
    // Closing gives the slots back.
    await Promise.all(
      open.map(
        (ws) =>
          new Promise((r) => {
            ws.once('close', r);
            ws.close();
          }),
      ),
    );
    await until(async () => (await gauge('dsh_terminal_sockets_open')) === 0, {
      what: 'the slots to be given back',
    });
    (await connect(url, api.keyA)).close();
  });

  it('input faster than the sandbox takes it pauses the socket; the server holds a bounded amount', async () => {
    await start(4);
    double.release();
    const agent = await api.createAgent(api.keyA);
    const ws = await connect(`${base}/v1/agents/${agent.id}/terminals/t1`, api.keyA);
    const frame = Buffer.alloc(256 * 1024, 'a');
    const total = 200 * frame.length; // 50 MiB
    let maxClientQueue = 0;
    for (let i = 0; i < 200; i++) {
      ws.send(frame);
      maxClientQueue = Math.max(maxClientQueue, ws.bufferedAmount);
    }
    let maxServer = 0;
    while (double.state.written < total) {
      maxServer = Math.max(maxServer, await gauge('dsh_terminal_input_pending_bytes'));
      maxClientQueue = Math.max(maxClientQueue, ws.bufferedAmount);
      await sleep(10);
    }
    expect(double.state.written).toBe(total); // nothing lost
    expect(maxServer).toBeLessThanOrEqual(INPUT_LIMIT);
    expect(await gauge('dsh_terminal_input_pending_bytes_max')).toBeLessThanOrEqual(INPUT_LIMIT);
    // The rest waited in the client (TCP pushed back) rather than in the server.
    expect(maxClientQueue).toBeGreaterThan(total / 2);
    expect(await gauge('dsh_terminal_input_pending_bytes')).toBe(0);
    ws.close();
  });

  it('deleting the agent closes its open sockets (1000 agent deleted) and refuses new ones', async () => {
    await start(0);
    double.release();
    const agent = await api.createAgent(api.keyA);
    const url = `${base}/v1/agents/${agent.id}/terminals/t1`;
    const ws = await connect(url, api.keyA);
    const closed = new Promise<[number, string]>((r) => ws.once('close', (c, why) => r([c, why.toString()])));
    expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${agent.id}`)).status).toBe(204);
    expect(await closed).toEqual([1000, 'agent deleted']);
    await expect(connect(url, api.keyA)).rejects.toThrow('HTTP 404');
    expect(await gauge('dsh_terminal_sockets_open')).toBe(0);
  });
});

/** One raw upgrade request; resolves with everything the server wrote before it closed. */
const rawUpgrade = (path: string, key: string): Promise<string> =>
  new Promise((resolve, reject) => {
    const socket = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      received += d;
    });
    socket.once('error', reject);
    socket.once('close', () => resolve(received));
    socket.write(
      `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nConnection: Upgrade\r\n` +
        'Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    );
  });

describe('idle polling', () => {
  it('output sent to the socket and its keystrokes keep idle CPUs polling; an open socket with nothing flowing does not', async () => {
    const device = recordingDevice();
    const poll = createIdlePoll({ enabled: true, lingerMs: 5, open: device.open });
    await start(0, () => poll.touch());
    double.release();
    const agent = await api.createAgent(api.keyA);
    const ws = await connect(`${base}/v1/agents/${agent.id}/terminals/t1`, api.keyA);
    expect(device.writes).toEqual([]); // open, with nothing flowing yet

    // Output with no keystroke (a build's log, `tail -f`).
    const received = new Promise<string>((r) => ws.once('message', (d: Buffer) => r(d.toString())));
    await until(() => double.state.attached === 1, { what: 'the terminal to be attached' });
    double.state.output(Buffer.from('output nobody typed for'), 23);
    expect(await received).toBe('output nobody typed for');
    expect(device.writes[0]).toBe(0);
    await device.written(NO_CONSTRAINT_US, 0);
    expect(poll.state).toBe('idle'); // the socket is still open

    const mark = device.writes.length;
    ws.send(Buffer.from('ls\n'));
    await device.written(0, mark);
    await until(() => double.state.written === 3, { what: 'the keystrokes to reach the terminal' });
    ws.close();
    poll.close();
  });
});

describe('refused upgrades', () => {
  it('answer with the JSON error body their content type promises', async () => {
    await start(0);
    double.release();
    const agent = await api.createAgent(api.keyA);
    const cases: [string, string, number, string][] = [
      [`/v1/agents/${agent.id}/terminals/t1`, 'dsk_wrong', 401, 'UNAUTHORIZED'],
      ['/v1/agents/agt_missing/terminals/t1', api.keyA, 404, 'NOT_FOUND'],
      [`/v1/agents/${agent.id}/terminals/nope`, api.keyA, 404, 'NOT_FOUND'],
      [`/v1/agents/${agent.id}/events`, api.keyA, 400, 'BAD_REQUEST'],
    ];
    for (const [path, key, status, code] of cases) {
      const answer = await rawUpgrade(path, key);
      const [head = '', body = ''] = answer.split('\r\n\r\n');
      expect(head).toMatch(new RegExp(`^HTTP/1.1 ${status} `));
      expect(head.toLowerCase()).toContain('content-type: application/json');
      expect(head).toContain(`Content-Length: ${Buffer.byteLength(body)}`);
      expect(JSON.parse(body)).toMatchObject({ error: { code } });
    }
  });
});
