// Forwarding a terminal WebSocket upgrade to the replica that owns the agent, at the socket level
// (host/api/forward/upgrade.ts), over two real loopback servers: the owner's handshake (its
// subprotocol, or its refusal) reaches the client unchanged, frames flow both ways, either side's
// close ends both, bytes the client sent right behind its request head are not lost, and an owner
// that is down answers 503 OWNER_UNREACHABLE on the client's socket.
import { createServer, type IncomingMessage } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import type { Duplex } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Route } from '../../../host/api/forward/route.ts';
import { forwardUpgrade } from '../../../host/api/forward/upgrade.ts';
import { until } from '../../helpers/until.ts';
import {
  frontApp,
  KEY,
  type Listening,
  listen,
  newOwnerState,
  type OwnerState,
  ownerApp,
} from './forward-servers.ts';

let state: OwnerState;
let owner: Listening;
let front: Listening;
let closeFront: () => void;
let route: Route;

beforeEach(async () => {
  state = newOwnerState();
  owner = await listen(ownerApp(state));
  route = { kind: 'forward', url: owner.url, replicaId: 'owner' };
  const made = frontApp((c) => (c.req.path.startsWith('/console/') ? { kind: 'local' } : route));
  closeFront = made.close;
  front = await listen(made.app, { tunnels: true });
});

afterEach(async () => {
  closeFront();
  await front.close();
  await owner.close();
});

const wsUrl = (path: string) => `${front.url.replace('http:', 'ws:')}${path}`;

/** An open socket and every message it got, or the HTTP answer that refused it. */
const open = (path: string) =>
  new Promise<{ ws: WebSocket; messages: (string | Buffer)[] }>((resolve, reject) => {
    const ws = new WebSocket(wsUrl(path), ['dsh.terminal.v1'], { headers: { authorization: 'Bearer k' } });
    const messages: (string | Buffer)[] = [];
    ws.on('message', (data: Buffer, binary) => messages.push(binary ? data : data.toString()));
    ws.on('open', () => resolve({ ws, messages }));
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => {
        body += d;
      });
      res.on('end', () =>
        reject(
          Object.assign(new Error(`HTTP ${res.statusCode}`), {
            status: res.statusCode,
            headers: res.headers,
            body,
          }),
        ),
      );
    });
    ws.on('error', reject);
  });

describe('forwarding a WebSocket upgrade', () => {
  it("tunnels the owner's handshake and frames both ways; the client's close reaches the owner", async () => {
    const { ws, messages } = await open('/v1/agents/a1/terminals/t1');
    expect(ws.protocol).toBe('dsh.terminal.v1');
    await until(() => messages.length >= 1, { what: 'the greeting' });
    expect(messages[0]).toBe('hello t1 from the owner, forwarded by front');
    ws.send('text frame');
    ws.send(Buffer.from([0, 1, 2, 255]));
    await until(() => messages.length >= 3, { what: 'the echoes' });
    expect(messages.slice(1)).toEqual(['text frame', Buffer.from([0, 1, 2, 255])]);
    ws.close(1000, 'client done');
    await until(() => state.socketClosed, { what: 'the owner to see the close' });
  });

  it('tunnels the request the route decided on: an in-process one made over the upgrade (the console)', async () => {
    const { ws, messages } = await open('/console/terminals/t9');
    await until(() => messages.length >= 1, { what: 'the greeting' });
    expect(messages[0]).toBe('hello t9 from the owner, forwarded by front');
    expect(state.lastAuthorization).toBe('Bearer console-session-key');
    ws.close();
  });

  it("the owner's close reaches the client", async () => {
    const { ws } = await open('/v1/agents/a1/terminals/t1');
    const closed = new Promise<[number, string]>((resolve) =>
      ws.on('close', (code, reason) => resolve([code, reason.toString()])),
    );
    ws.send('bye');
    expect(await closed).toEqual([1000, 'owner says bye']);
  });

  it("passes the owner's refusal (a plain HTTP answer) to the client", async () => {
    await expect(open('/v1/agents/a1/nothing-upgrades-here')).rejects.toMatchObject({ status: 404 });
  });

  it('answers 503 OWNER_UNREACHABLE with Retry-After: 1 when the owner is down', async () => {
    await owner.close();
    const refused = await open('/v1/agents/a1/terminals/t1').catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 503, headers: { 'retry-after': '1' } });
    expect(JSON.parse((refused as { body: string }).body).error.code).toBe('OWNER_UNREACHABLE');
    owner = await listen(ownerApp(state)); // for afterEach
  });

  it("forwardUpgrade works from a server's own 'upgrade' listener too (the raw hook)", async () => {
    const raw = createServer();
    raw.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      void forwardUpgrade(
        req,
        socket,
        head,
        { url: owner.url, replicaId: 'owner' },
        {
          replica: { id: 'edge', key: KEY },
          client: '198.51.100.9',
        },
      );
    });
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    try {
      const ws = new WebSocket(
        `ws://127.0.0.1:${(raw.address() as AddressInfo).port}/v1/agents/a1/terminals/t2`,
      );
      const first = await new Promise<string>((resolve, reject) => {
        ws.once('message', (data: Buffer) => resolve(data.toString()));
        ws.once('error', reject);
      });
      expect(first).toBe('hello t2 from the owner, forwarded by edge');
      ws.close();
    } finally {
      raw.closeAllConnections();
      await new Promise((resolve) => raw.close(resolve));
    }
  });

  it('keeps the bytes a client sent right behind its request head', async () => {
    const socket = connect(Number(new URL(front.url).port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    // A masked text frame ("early") in the same write as the head: the front's server reads it
    // with the head, so it is handed over as the upgrade's head bytes, not left on the socket.
    const payload = Buffer.from('early');
    const mask = Buffer.from([1, 2, 3, 4]);
    const frame = Buffer.concat([
      Buffer.from([0x81, 0x80 | payload.length]),
      mask,
      Buffer.from(payload.map((byte, i) => byte ^ (mask[i % 4] as number))),
    ]);
    const head = [
      'GET /v1/agents/a1/terminals/t1 HTTP/1.1',
      `Host: ${new URL(front.url).host}`,
      'Connection: Upgrade',
      'Upgrade: websocket',
      'Sec-WebSocket-Version: 13',
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
      '',
      '',
    ].join('\r\n');
    let received = Buffer.alloc(0);
    socket.on('data', (data: Buffer) => {
      received = Buffer.concat([received, data]);
    });
    socket.write(Buffer.concat([Buffer.from(head), frame]));
    // The owner echoes the frame as an unmasked text frame: 0x81, length, payload.
    await until(() => received.includes(Buffer.from([0x81, payload.length, ...payload])), {
      what: 'the echo of the early frame',
    });
    expect(received.toString('latin1')).toMatch(/^HTTP\/1\.1 101 /);
    socket.destroy();
  });
});
