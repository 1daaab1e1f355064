// Issue 28: "One idle connection stalls a sandbox's egress." An agent opened a connection to its
// proxy and sent nothing; every other request of that sandbox got 503 after 10 s until it closed,
// because the host asked sandboxd for the next connection only once the last one's first byte came.
// Now sandboxd says at once that a connection arrived, the host asks for the next one then, and
// each connection has a head deadline of its own. A real sandboxd (local, from source) and the
// control plane's real pump and proxy server; a gateway double answers plain-HTTP requests.
import { connect, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import type { EgressGateway } from '../../../host/egress/gateway.ts';
import { createSandboxEgress } from '../../../host/egress/proxy/index.ts';
import { SandboxError } from '../../../host/errors.ts';
import { until } from '../../helpers/until.ts';
import { useLocalSandboxd } from '../sandboxd/harness.ts';

const local = useLocalSandboxd();
const HEAD_MS = 3000;

const gateway: Pick<EgressGateway, 'audit' | 'authorize' | 'connect' | 'fetch' | 'intercepts'> = {
  authorize: async () => {
    throw new SandboxError('EGRESS_DENIED', 'unused');
  },
  connect: async () => {
    throw new SandboxError('EGRESS_DENIED', 'unused');
  },
  fetch: async (_caller, url) => new Response(`fetched ${String(url)}\n`, { status: 200 }),
  intercepts: async () => false,
  audit: () => {},
};
const egress = createSandboxEgress({
  gateway,
  callerOf: async (agentId) => ({ tenantId: 't', agentId, sessionId: agentId, via: 'proxy' }),
  headersTimeoutMs: HEAD_MS,
});
afterAll(() => egress.close());

/** A client of the sandbox's proxy: what it received, and whether it was closed. */
async function client(): Promise<{ socket: Socket; state: { text: string; closed: boolean } }> {
  const { stdout } = await local.c.exec('printf %s "$HTTP_PROXY"');
  const port = Number(/:(\d+)$/.exec(stdout)?.[1]);
  const socket = connect(port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  const state = { text: '', closed: false };
  socket.on('data', (b: Buffer) => {
    state.text += b.toString();
  });
  socket.on('error', () => {});
  socket.on('close', () => {
    state.closed = true;
  });
  return { socket, state };
}

describe("one idle connection does not stall the sandbox's egress", () => {
  it('serves other connections while one sends nothing, and closes the idle one on its own deadline', async () => {
    const sandboxd = local.c.egress;
    if (!sandboxd) throw new Error('sandboxd offers no egress');
    const { stop } = egress.attach('agent', sandboxd);
    const idle = await client();
    // Requests while the idle connection is open: each is answered, none waits for it (before,
    // each waited out sandboxd's queue and got its 503).
    for (const path of ['/one', '/two', '/three']) {
      const busy = await client();
      busy.socket.write(`GET http://a.test${path} HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n`);
      await until(() => busy.state.closed, { what: `the answer to ${path}`, timeoutMs: 30_000 });
      expect(busy.state.text).toMatch(/^HTTP\/1\.1 200/);
      expect(busy.state.text).toContain(`fetched http://a.test${path}`);
    }
    // The idle one ends by its own head deadline, told why.
    await until(() => idle.state.closed, { what: 'the idle connection closed', timeoutMs: 30_000 });
    expect(idle.state.text).toMatch(/^HTTP\/1\.1 408/);
    expect(idle.state.text).toContain('No complete request head');
    stop();
  });

  it('a connection that went quiet after its answer is closed by its keep-alive deadline', async () => {
    const sandboxd = local.c.egress;
    if (!sandboxd) throw new Error('sandboxd offers no egress');
    const quiet = createSandboxEgress({
      gateway,
      callerOf: async (agentId) => ({ tenantId: 't', agentId, sessionId: agentId, via: 'proxy' }),
      headersTimeoutMs: HEAD_MS,
      keepAliveMs: HEAD_MS,
    });
    const { stop } = quiet.attach('agent', sandboxd);
    const kept = await client();
    kept.socket.write('GET http://a.test/kept HTTP/1.1\r\nHost: a.test\r\n\r\n');
    await until(() => kept.state.text.includes('fetched http://a.test/kept'), { what: 'the answer' });
    await until(() => kept.state.closed, { what: 'the kept-alive connection closed', timeoutMs: 30_000 });
    stop();
    quiet.close();
  });
});
