// Upgrades nobody takes (adversarial pass on connection admission). The node server hands every
// request with an Upgrade header to its 'upgrade' listeners and stops managing its socket.
// - `Upgrade: websocket` to a route that is no terminal socket ran through the app, which answered
//   with a body nobody read: an event stream or a download there kept its tenant's concurrency slot
//   (and its subscription or sandbox stream) for good; 16 such requests, each closed by the client,
//   answered every later request of that tenant 429 until the service restarted.
// - Any other upgrade got no answer, and the upgrades the app refused (401, 404) were only half
//   closed: those sockets never closed on the server, not even after their client went away, and
//   3 of them made graceful shutdown wait forever.
// Real server on loopback, public API.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../helpers/until.ts';
import { type Harness, METRICS_KEY, startHarness } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ config: { tenantConcurrency: 4 } });
});
afterAll(() => h?.close());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Sends one raw upgrade request; resolves with what came back once its head is in or the server
 * closed (or, as a hang guard, after 10 s).
 */
const upgrade = (path: string, key: string, accept: string, kind = 'websocket'): Promise<string> =>
  new Promise((resolve, reject) => {
    const socket = net.connect(h.server.port, '127.0.0.1');
    let received = '';
    socket.setEncoding('utf8');
    const done = () => {
      clearTimeout(guard);
      socket.destroy();
      resolve(received);
    };
    socket.on('data', (d: string) => {
      received += d;
      if (received.includes('\r\n\r\n')) done();
    });
    socket.once('error', reject);
    socket.once('close', done);
    const guard = setTimeout(done, 10_000);
    socket.write(
      `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nAccept: ${accept}\r\n` +
        `Connection: Upgrade\r\nUpgrade: ${kind}\r\nSec-WebSocket-Version: 13\r\n` +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    );
  });

describe('WebSocket upgrades outside the terminal routes', () => {
  it('are refused, and hold no request slot of their tenant afterwards', async () => {
    const agent = await h.agent(h.keyA);
    const answers: string[] = [];
    for (let i = 0; i < 8; i++)
      answers.push(await upgrade(`/v1/agents/${agent}/events`, h.keyA, 'text/event-stream'));
    // The tenant's requests are served as before (tenantConcurrency is 4 here), once the server
    // has closed the refused sockets.
    await until(async () => (await h.http(h.keyA, 'GET', '/v1/agents')).status === 200, {
      what: 'a request slot',
    });
    const events = await h.http(h.keyA, 'GET', `/v1/agents/${agent}/events`);
    expect(events.status).toBe(200);
    for (const answer of answers) expect(answer).toMatch(/^HTTP\/1\.1 400 /);
  });

  it('are answered and closed on the server, and a shutdown does not wait for them', async () => {
    const own = await startHarness();
    const agent = await own.agent(own.keyA);
    const raw = (request: string) =>
      new Promise<{ socket: net.Socket; answer: Promise<string> }>((resolve, reject) => {
        const socket = net.connect(own.server.port, '127.0.0.1');
        socket.setEncoding('utf8');
        let received = '';
        socket.on('data', (d: string) => {
          received += d;
        });
        // The client only ever half-closes: it never ends its side by itself.
        const answer = new Promise<string>((r) => socket.once('end', () => r(received)));
        socket.once('connect', () => resolve({ socket, answer }));
        socket.once('error', reject);
        socket.write(request);
      });
    const head = (path: string, upgrade: string, key?: string) =>
      `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: ${upgrade}\r\n` +
      `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n` +
      (key === undefined ? '' : `Authorization: Bearer ${key}\r\n`) +
      '\r\n';
    const opened = [
      await raw(head('/v1/health', 'foo')),
      await raw(head(`/v1/agents/${agent}/terminals/t1`, 'websocket')), // no key: 401
      await raw(head(`/v1/agents/${agent}/terminals/t1`, 'websocket', 'wrong')), // 401
    ];
    for (const o of opened) o.socket.allowHalfOpen = true;
    const answers = await Promise.all(opened.map((o) => o.answer));
    expect(answers[0]).toMatch(/^HTTP\/1\.1 400 /);
    expect(answers[1]).toMatch(/^HTTP\/1\.1 401 /);
    expect(answers[2]).toMatch(/^HTTP\/1\.1 401 /);
    // The server closed them, though their clients did not: only the request asking is open.
    const open = async () => {
      const metrics = await own.http(METRICS_KEY, 'GET', '/metrics', undefined, { Connection: 'close' });
      return /^dsh_connections_open (\d+)$/m.exec(metrics.text)?.[1];
    };
    for (let i = 0; i < 50 && (await open()) !== '1'; i++) await sleep(100);
    expect(await open()).toBe('1');
    // And a shutdown ends (it waited for those sockets forever).
    await own.close();
    for (const o of opened) o.socket.destroy();
  }, 60_000);
});
