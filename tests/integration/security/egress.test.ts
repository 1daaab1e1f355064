// Issue 28, egress from a real sandbox through the public API (the control plane `serve` runs, a
// real container, sandboxd's proxy): what an adversarial suite broke.
// - Budgets charged after the bytes left: with 1 MiB per hour, curl uploaded 12 MiB through a
//   CONNECT tunnel and as a plain-HTTP body. Now the upstream gets at most the budget and curl
//   sees a cut tunnel or a 429 saying why; a download is cut at the budget too.
// - Credentials in clear text: a credential for a host went over plain http:// (curl through the
//   proxy, web_fetch). Now only over TLS, unless the credential says `allowInsecure: true`.
// - One idle connection stalled the sandbox's egress: others got 503 after 10 s while it was
//   open. Now they are served at once and the idle one is closed by its own head deadline.
// A loopback server on 127.0.0.2 stands in for the internet (127.0.0.1 is the container's own).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, type Loose, startHarness, text } from './harness.ts';

const MiB = 1024 * 1024;
const SECRET = 'Bearer egress-cleartext-3e7b';
let h: Harness;
let site: Server;
let url = '';
let port = 0;
/** Body bytes the site received, and the authorization header of each /hello. */
const seen = { body: 0, authorization: [] as Array<string | undefined> };

beforeAll(async () => {
  const megabyte = Buffer.alloc(MiB, 'd');
  site = createServer((req, res) => {
    req.on('data', (b: Buffer) => {
      seen.body += b.length;
    });
    req.on('error', () => {});
    req.on('end', () => {
      if (req.url === '/hello') {
        seen.authorization.push(req.headers.authorization);
        return void res.end('hello\n');
      }
      const bytes = /^\/bytes\/(\d+)$/.exec(req.url ?? '');
      if (!bytes) return void res.end('ok\n');
      let left = Number(bytes[1]);
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': left });
      const pump = (): void => {
        while (left > 0) {
          const n = Math.min(left, MiB);
          left -= n;
          if (!res.write(n === MiB ? megabyte : megabyte.subarray(0, n))) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    });
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.2', () => resolve()));
  port = (site.address() as AddressInfo).port;
  url = `http://127.0.0.2:${port}`;
  h = await startHarness({
    egress: true,
    // A head deadline short enough to watch an idle connection end (the API's too: one setting).
    config: { egressTestHosts: [{ ip: '127.0.0.2' }], headersTimeoutMs: 5000 },
  });
});
afterAll(async () => {
  await h?.close();
  site?.closeAllConnections();
  site?.close();
});

/** A tenant of its own (budgets are per tenant), its egress settings, and an agent. */
async function tenant(name: string, egress: Record<string, unknown>, agent: Record<string, unknown> = {}) {
  const key = (await h.server.store.tenants.createTenant(name)).apiKey;
  const put = await h.http(key, 'PUT', '/v1/egress', {
    allow: [{ host: '127.0.0.2', ports: [port] }],
    ...egress,
  });
  expect(put.status, put.text).toBe(200);
  return { key, agentId: await h.agent(key, agent) };
}

async function sh(key: string, agentId: string, command: string): Promise<string> {
  const r = await h.bash(key, agentId, command, 120_000);
  expect(r.ok, JSON.stringify(r)).toBe(true);
  return String((r as Loose).value.stdout);
}

describe('egress budgets are charged as the bytes flow', () => {
  it('12 MiB up with 1 MiB per hour: a plain-HTTP body is refused unsent (429), a tunnel is cut at the budget', async () => {
    const { key, agentId } = await tenant('uploads', { budget: { bytesPerHour: MiB } });
    await sh(key, agentId, 'head -c 12582912 /dev/zero > /tmp/big.bin');
    seen.body = 0;
    const plain = await sh(
      key,
      agentId,
      `curl -sS -D - -o /dev/null --data-binary @/tmp/big.bin ${url}/upload 2>&1; echo "exit=$?"`,
    );
    expect(plain).toMatch(/^HTTP\/1\.1 429/m);
    expect(plain).toMatch(/x-dsh-egress: budget; reason="bytes"/i);
    expect(seen.body).toBe(0);
    // Through a CONNECT tunnel (curl -p): the same upload is cut once the budget is used.
    const tunnel = await sh(
      key,
      agentId,
      `curl -sS -p -o /dev/null --data-binary @/tmp/big.bin ${url}/upload 2>&1; echo "exit=$?"`,
    );
    expect(tunnel).not.toContain('exit=0');
    expect(seen.body).toBeGreaterThan(0);
    expect(seen.body).toBeLessThanOrEqual(MiB);
  });

  it('12 MiB down with 1 MiB per hour: the download is cut at the budget', async () => {
    const { key, agentId } = await tenant('downloads', { budget: { bytesPerHour: MiB } });
    const out = await sh(
      key,
      agentId,
      `curl -sS -o /tmp/down.bin ${url}/bytes/12582912 2>&1; echo "exit=$?"; stat -c 'size=%s' /tmp/down.bin`,
    );
    expect(out).not.toContain('exit=0');
    const size = Number(/size=(\d+)/.exec(out)?.[1]);
    expect(size).toBeLessThanOrEqual(MiB + 64 * 1024);
  });
});

describe('credentials go only over TLS unless they say allowInsecure', () => {
  it('a plain-HTTP host never sees the credential through curl or web_fetch; with the opt-in it does', async () => {
    const credential = { name: 'site', host: '127.0.0.2', header: 'Authorization', value: SECRET };
    const { key, agentId } = await tenant('credentials', { credentials: [credential] }, { fetch: true });
    seen.authorization.length = 0;
    expect(await sh(key, agentId, `curl -sS --fail ${url}/hello`)).toBe('hello\n');
    const [fetched] = await h.calls(key, agentId, [['f1', 'web_fetch', { url: `${url}/hello` }]]);
    expect(text(fetched)).toContain('hello');
    expect(seen.authorization).toEqual([undefined, undefined]);
    const put = await h.http(key, 'PUT', '/v1/egress', {
      allow: [{ host: '127.0.0.2', ports: [port] }],
      credentials: [{ ...credential, allowInsecure: true }],
    });
    expect(put.json.credentials).toEqual([
      { name: 'site', host: '127.0.0.2', header: 'Authorization', allowInsecure: true },
    ]);
    await sh(key, agentId, `curl -sS --fail ${url}/hello`);
    await h.calls(key, agentId, [['f2', 'web_fetch', { url: `${url}/hello` }]]);
    expect(seen.authorization).toEqual([undefined, undefined, SECRET, SECRET]);
  });
});

describe("one idle connection does not stall the sandbox's egress", () => {
  it('a request goes through while an idle connection is open, and the idle one is closed by its own deadline', async () => {
    const { key, agentId } = await tenant('idle', {});
    // The shell holds a connection to the proxy that sends nothing, makes a request, then reads
    // the idle connection until the proxy closes it.
    const out = await sh(
      key,
      agentId,
      [
        'exec 3<>/dev/tcp/127.0.0.1/3128',
        `curl -sS -o /dev/null -w 'request=%{http_code}\\n' ${url}/hello`,
        'cat <&3',
        'echo "idle closed"',
      ].join('\n'),
    );
    expect(out).toContain('request=200');
    expect(out).toMatch(/HTTP\/1\.1 408 Request Timeout[\s\S]*idle closed/);
  });
});
