// A CONNECT from a sandbox: its target checked (host:port, a port from 1 to 65535), then either an
// opaque tunnel through gateway.connect (allowlist, pinned address, budget charged as the bytes
// pass, and audit are the gateway's), or, for a host the tenant gave a credential for (with
// `intercept`), intercepted: once the gateway admits the host, we answer 200, terminate the
// client's TLS with a leaf of the tenant's CA (../intercept/) and hand the TLS socket to the inner
// server (forward.ts serves what it asks).
// Invariants: a refusal is an HTTP answer written before the client's connection is used for
// anything else; a client gone while the gateway connects takes the attempt with it; an
// intercepted connection is admitted and audited before any TLS.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type SecureContext, TLSSocket } from 'node:tls';
import type { Authorities } from '../intercept/authority.ts';
import type { EgressCaller } from '../types.ts';
import { badRequest, rawRefusal, refusalOf } from './refusals.ts';
import type { ProxyState } from './state.ts';

/** host:port of a CONNECT: a name or IPv4 address, or a bracketed IPv6 address; a port of 1-5 digits. */
const AUTHORITY = /^(?:([A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}))|\[([0-9A-Fa-f:.]{2,45})\]):([0-9]{1,5})$/;

export async function onConnect(
  s: ProxyState,
  req: IncomingMessage,
  client: Duplex,
  head: Buffer,
): Promise<void> {
  const { callers, gateway, options, idleMs } = s;
  client.on('error', () => {});
  const caller = callers.get(req.socket);
  const m = AUTHORITY.exec(req.url ?? '');
  const port = Number(m?.[3]);
  if (!caller || !m || port < 1 || port > 65535) {
    client.end(
      rawRefusal(
        badRequest(`CONNECT needs host:port, not ${JSON.stringify((req.url ?? '').slice(0, 100))}.`),
      ),
    );
    return;
  }
  const host = (m[1] ?? m[2]) as string;
  if (options.intercept && (await gateway.intercepts(caller.tenantId, host))) {
    await intercept(
      s,
      caller,
      client,
      head,
      host,
      m[2] === undefined ? `${host}:${port}` : `[${host}]:${port}`,
      port,
    );
    return;
  }
  // A client gone while the gateway connects takes the connection attempt with it.
  const gone = new AbortController();
  const onGone = (): void => gone.abort();
  client.once('close', onGone);
  let upstream: Awaited<ReturnType<typeof gateway.connect>>;
  try {
    upstream = await gateway.connect(caller, { host, port }, gone.signal);
  } catch (error) {
    client.end(rawRefusal(refusalOf(error)));
    return;
  } finally {
    client.off('close', onGone);
  }
  if (client.destroyed) {
    upstream.destroy();
    return;
  }
  client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
  upstream.join(client, { head, idleMs });
}

/** Terminates the client's TLS for `host` with the tenant's leaf and serves what it asks inside. */
async function intercept(
  s: ProxyState,
  caller: EgressCaller,
  client: Duplex,
  head: Buffer,
  host: string,
  authority: string,
  port: number,
): Promise<void> {
  const { gateway, options, inside, intercepted } = s;
  const authorities = options.intercept as Authorities;
  let secureContext: SecureContext;
  try {
    // Admission before any TLS: a refused host gets its 403 as a tunnel would.
    const grant = await gateway.authorize(caller, { host, port, tls: true });
    grant.lease.close();
    // The connection itself is an event too; each request inside gets its own from gateway.fetch.
    gateway.audit(caller, {
      decision: 'allow',
      reason: 'intercepted',
      host: grant.host,
      port,
      ip: grant.ip,
      credentials: grant.credentials.map((c) => c.name),
    });
    // The leaf before the 200: what the client sends next is already TLS.
    secureContext = await authorities.contextFor(caller.tenantId, host);
  } catch (error) {
    client.end(rawRefusal(refusalOf(error)));
    return;
  }
  client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
  if (head.length > 0) client.unshift(head);
  const tls = new TLSSocket(client, {
    isServer: true,
    secureContext,
    ALPNProtocols: ['http/1.1'],
  });
  tls.on('error', () => tls.destroy());
  client.on('close', () => tls.destroy());
  tls.on('close', () => client.destroy());
  inside.set(tls, { caller, origin: `https://${authority}` });
  intercepted.emit('connection', tls);
}
