// The control plane's HTTP forward proxy for sandboxes: every connection a process in a container
// makes to sandboxd's proxy arrives here as a Duplex (./duplex.ts) and is parsed by one Node HTTP
// server (llhttp, headers bounded by maxHeaderBytes, a request head due within headersTimeoutMs of
// the connection's arrival, each connection on its own: ./heads.ts).
// CONNECT host:port becomes gateway.connect (an opaque tunnel: allowlist, pinned address, budget
// charged as the bytes pass, and audit are the gateway's); a request with an absolute http:// URL
// becomes gateway.fetch with redirects left to the client (each hop it follows is a new request
// here, checked again), its body charged before it is sent, and only the tenant's credentials for
// that host that say `allowInsecure` added by the gateway (plain HTTP is read on the path). A
// refusal is an HTTP answer the client shows: 403 (denied), 429 (budget), 408 (no request in time)
// or 502 (unreachable), with `X-Dsh-Egress` saying which and why and the gateway's message as the
// body; never a hang, never a dropped connection without a word (but a tunnel cut at the budget:
// inside it, nothing can be said).
// A CONNECT to a host the tenant gave a credential for is intercepted instead (with `intercept`):
// once the gateway admits the host, we answer 200, terminate the client's TLS with a leaf of the
// tenant's CA (../intercept/), and each request inside goes through gateway.fetch as an https://
// URL, so the gateway adds the credential and verifies the upstream's certificate itself.
// Invariants: everything from the container is hostile: the target of a CONNECT must be host:port
// with a port from 1 to 65535, a plain request's body is read up to maxBodyBytes, hop-by-hop and
// proxy headers never travel on; the caller of a connection is fixed when it arrives.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { TLSSocket } from 'node:tls';
import { SandboxError } from '../../errors.ts';
import type { EgressGateway } from '../gateway.ts';
import type { Authorities } from '../intercept/authority.ts';
import type { EgressCaller } from '../types.ts';
import { enforceHeadDeadlines } from './heads.ts';

export interface ProxyServerOptions {
  gateway: Pick<EgressGateway, 'audit' | 'authorize' | 'connect' | 'fetch' | 'intercepts'>;
  /** The tenants' CAs: HTTPS to a host with a credential is intercepted with them. Default none: every CONNECT is a tunnel. */
  intercept?: Authorities;
  /** Largest request head from the client. Default 16 KiB. */
  maxHeaderBytes?: number;
  /** Largest body of a plain-HTTP request (CONNECT tunnels are not bounded here). Default 32 MiB. */
  maxBodyBytes?: number;
  /** A request head must be complete within this of the connection's arrival (each connection on its own). Default 30000 ms. */
  headersTimeoutMs?: number;
  /** The next request head on a kept-alive connection is due within this of the last answer. Default 60000 ms. */
  keepAliveMs?: number;
  /** A tunnel or upstream response idle this long is cut. Default 300000 ms. */
  idleMs?: number;
}

/** Headers that belong to one connection (RFC 9110 7.6.1) or to the proxy: never forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
]);
/** host:port of a CONNECT: a name or IPv4 address, or a bracketed IPv6 address; a port of 1-5 digits. */
const AUTHORITY = /^(?:([A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}))|\[([0-9A-Fa-f:.]{2,45})\]):([0-9]{1,5})$/;

interface Refusal {
  status: number;
  kind: string;
  reason: string;
  message: string;
}

/** How a failure reads to the client: the gateway's code as a status, its reason and message. */
export function refusalOf(error: unknown): Refusal {
  if (error instanceof SandboxError) {
    const reason = String(error.data?.reason ?? error.code);
    if (error.code === 'EGRESS_DENIED')
      return { status: 403, kind: 'denied', reason, message: error.message };
    if (error.code === 'EGRESS_BUDGET_EXCEEDED')
      return { status: 429, kind: 'budget', reason, message: error.message };
    return { status: 502, kind: 'failed', reason, message: error.message };
  }
  return { status: 502, kind: 'failed', reason: 'internal error', message: 'The egress gateway failed.' };
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  403: 'Forbidden',
  408: 'Request Timeout',
  429: 'Too Many Requests',
};

/** A whole HTTP/1.1 answer as bytes (for a socket that is no longer the HTTP server's). */
function rawRefusal(r: Refusal): string {
  const body = `${r.message}\n`;
  return (
    `HTTP/1.1 ${r.status} ${STATUS_TEXT[r.status] ?? 'Bad Gateway'}\r\n` +
    `X-Dsh-Egress: ${r.kind}; reason="${headerSafe(r.reason)}"\r\n` +
    `Content-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `Connection: close\r\n\r\n${body}`
  );
}

const headerSafe = (s: string): string => s.replace(/[^\x20-\x7e]|"/g, '?').slice(0, 200);

function refuse(res: ServerResponse, r: Refusal): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = `${r.message}\n`;
  res.writeHead(r.status, {
    'x-dsh-egress': `${r.kind}; reason="${headerSafe(r.reason)}"`,
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    connection: 'close',
  });
  res.end(body);
}

const badRequest = (message: string): Refusal => ({
  status: 400,
  kind: 'bad-request',
  reason: 'malformed',
  message,
});

async function readBody(req: IncomingMessage, max: number): Promise<Buffer | undefined> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > max)
      throw new SandboxError(
        'EGRESS_DENIED',
        `A plain-HTTP request body over ${max} bytes is refused; use HTTPS.`,
        {
          data: { reason: 'body too large' },
        },
      );
    parts.push(chunk);
  }
  return size === 0 ? undefined : Buffer.concat(parts);
}

export function createProxyServer(options: ProxyServerOptions) {
  const { gateway } = options;
  const maxBodyBytes = options.maxBodyBytes ?? 32 * 1024 * 1024;
  const idleMs = options.idleMs ?? 300_000;
  const callers = new WeakMap<object, EgressCaller>();
  const inside = new WeakMap<object, { caller: EgressCaller; origin: string }>();
  const deadlines = {
    headMs: options.headersTimeoutMs ?? 30_000,
    keepAliveMs: options.keepAliveMs ?? 60_000,
  };
  // Node's head timeout does not run for servers that never listen, and its keep-alive timeout
  // only on sockets with setTimeout (the TLS ones): ./heads.ts holds every connection to both.
  const serverOptions = {
    maxHeaderSize: options.maxHeaderBytes ?? 16 * 1024,
    requestTimeout: 0,
    keepAliveTimeout: deadlines.keepAliveMs,
  };
  const server = createServer(serverOptions);
  const intercepted = createServer(serverOptions);
  enforceHeadDeadlines(server, {
    ...deadlines,
    timeoutAnswer: (ms) =>
      rawRefusal({
        status: 408,
        kind: 'timeout',
        reason: 'no request',
        message: `No complete request head within ${ms} ms; the connection is closed.`,
      }),
  });
  enforceHeadDeadlines(intercepted, deadlines);

  async function onConnect(req: IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
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
    if (options.intercept && gateway.intercepts(caller.tenantId, host)) {
      await intercept(
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
    caller: EgressCaller,
    client: Duplex,
    head: Buffer,
    host: string,
    authority: string,
    port: number,
  ): Promise<void> {
    const authorities = options.intercept as Authorities;
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
    } catch (error) {
      client.end(rawRefusal(refusalOf(error)));
      return;
    }
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) client.unshift(head);
    const tls = new TLSSocket(client, {
      isServer: true,
      secureContext: authorities.contextFor(caller.tenantId, host),
      ALPNProtocols: ['http/1.1'],
    });
    tls.on('error', () => tls.destroy());
    client.on('close', () => tls.destroy());
    tls.on('close', () => client.destroy());
    inside.set(tls, { caller, origin: `https://${authority}` });
    intercepted.emit('connection', tls);
  }

  async function onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const caller = callers.get(req.socket);
    const target = req.url ?? '';
    if (!caller || !/^http:\/\//i.test(target)) {
      refuse(
        res,
        badRequest(
          /^https:\/\//i.test(target)
            ? 'HTTPS goes through CONNECT (set HTTPS_PROXY to this proxy as an http:// URL).'
            : 'This is an HTTP proxy: send absolute http:// URLs, or CONNECT for HTTPS.',
        ),
      );
      return;
    }
    await forward(req, res, caller, target);
  }

  /** A request inside an intercepted TLS connection: origin-form, to the host of its CONNECT. */
  async function onInterceptedRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const at = inside.get(req.socket);
    const path = req.url ?? '';
    if (!at || !path.startsWith('/')) {
      refuse(res, badRequest('Inside a tunnel, send origin-form requests (a path).'));
      return;
    }
    await forward(req, res, at.caller, `${at.origin}${path}`);
  }

  /** One request through gateway.fetch (credentials added there), the answer streamed back. */
  async function forward(req: IncomingMessage, res: ServerResponse, caller: EgressCaller, target: string) {
    const headers: Array<[string, string]> = [];
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i] as string;
      if (!HOP_BY_HOP.has(name.toLowerCase())) headers.push([name, req.rawHeaders[i + 1] as string]);
    }
    const ac = new AbortController();
    res.on('close', () => ac.abort());
    let response: Response;
    try {
      const body = await readBody(req, maxBodyBytes);
      response = await gateway.fetch(caller, target, {
        method: req.method ?? 'GET',
        headers,
        body: body ?? null,
        maxRedirects: 0,
        idleTimeoutMs: idleMs,
        signal: ac.signal,
      });
    } catch (error) {
      refuse(res, refusalOf(error));
      return;
    }
    const out: Record<string, string | string[]> = {};
    for (const [name, value] of response.headers)
      if (!HOP_BY_HOP.has(name) || name === 'content-length') out[name] = value;
    const cookies = response.headers.getSetCookie();
    if (cookies.length > 0) out['set-cookie'] = cookies;
    res.writeHead(response.status, out);
    if (!response.body) {
      res.end();
      return;
    }
    const body = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
    body.on('error', () => res.destroy());
    body.pipe(res);
  }

  server.on('connect', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    void onConnect(req, client, head).catch(() => client.destroy());
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    void onRequest(req, res).catch(() => res.destroy());
  });
  intercepted.on('request', (req: IncomingMessage, res: ServerResponse) => {
    void onInterceptedRequest(req, res).catch(() => res.destroy());
  });
  intercepted.on('clientError', (_error: Error, socket: Duplex) => socket.destroy());
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (socket.writable)
      socket.end(
        rawRefusal(
          badRequest(
            error.code === 'HPE_HEADER_OVERFLOW'
              ? 'The request head is too large.'
              : `Malformed proxy request (${error.code ?? 'parse error'}).`,
          ),
        ),
      );
    else socket.destroy();
  });

  return {
    /** Serves one connection from the sandbox of `caller`'s agent. */
    handle(connection: Duplex, caller: EgressCaller): void {
      callers.set(connection, caller);
      server.emit('connection', connection);
    },
    /** Ends idle keep-alive connections; open tunnels end with their sandboxes. */
    close(): void {
      server.closeIdleConnections();
      intercepted.closeIdleConnections();
    },
  };
}

export type ProxyServer = ReturnType<typeof createProxyServer>;
