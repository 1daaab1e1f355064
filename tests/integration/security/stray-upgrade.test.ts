// A WebSocket upgrade sent to a route that is no terminal socket (adversarial pass on connection
// admission). The node server hands every `Upgrade: websocket` request to the app outside the
// HTTP response path and discards the response's body unread; an event stream or a download
// answered there used to keep its tenant's concurrency slot (and its subscription or sandbox
// stream) for good: 16 such requests, each closed by the client, answered every later request
// of that tenant 429 until the service restarted. Real server on loopback, public API.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ config: { tenantConcurrency: 4 } });
});
afterAll(() => h?.close());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sends one raw upgrade request; resolves with what came back once the server closed or 1 s passed. */
const upgrade = (path: string, key: string, accept: string): Promise<string> =>
  new Promise((resolve, reject) => {
    const socket = net.connect(h.server.port, '127.0.0.1');
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      received += d;
    });
    socket.once('error', reject);
    const done = () => {
      socket.destroy();
      resolve(received);
    };
    socket.once('close', done);
    setTimeout(done, 1000);
    socket.write(
      `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nAccept: ${accept}\r\n` +
        'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n' +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    );
  });

describe('WebSocket upgrades outside the terminal routes', () => {
  it('are refused, and hold no request slot of their tenant afterwards', async () => {
    const agent = await h.agent(h.keyA);
    const answers: string[] = [];
    for (let i = 0; i < 8; i++)
      answers.push(await upgrade(`/v1/agents/${agent}/events`, h.keyA, 'text/event-stream'));
    await sleep(200);
    // The tenant's requests are served as before (tenantConcurrency is 4 here).
    const res = await h.http(h.keyA, 'GET', '/v1/agents');
    expect(res.status).toBe(200);
    const events = await h.http(h.keyA, 'GET', `/v1/agents/${agent}/events`);
    expect(events.status).toBe(200);
    for (const answer of answers) expect(answer).toMatch(/^HTTP\/1\.1 400 /);
  });
});
