// The control plane's HTTP forward proxy for sandboxes: every connection a process in a container
// makes to sandboxd's proxy arrives here as a Duplex (./duplex.ts) and is parsed by one Node HTTP
// server (llhttp, headers bounded by maxHeaderBytes, a request head due within headersTimeoutMs of
// the connection's arrival, each connection on its own: ./heads.ts).
// This module wires the parts, each in its own module: tunnel.ts answers a CONNECT (an opaque
// tunnel through gateway.connect, or intercepted for a host the tenant gave a credential for);
// forward.ts sends a plain http:// request, or one inside an intercepted connection, through
// gateway.fetch; refusals.ts says why not: 403 (denied), 429 (budget), 408 (no request in time),
// 400 (malformed) or 502 (unreachable), with `X-Dsh-Egress` saying which and why and the gateway's
// message as the body; state.ts holds the options and what the parts share.
// Invariants: everything from the container is hostile; never a hang, never a dropped connection
// without a word (but a tunnel cut at the budget: inside it, nothing can be said); the caller of a
// connection is fixed when it arrives.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { EgressCaller } from '../types.ts';
import { onInterceptedRequest, onRequest } from './forward.ts';
import { enforceHeadDeadlines } from './heads.ts';
import { badRequest, rawRefusal } from './refusals.ts';
import type { ProxyServerOptions, ProxyState } from './state.ts';
import { onConnect } from './tunnel.ts';

export { refusalOf } from './refusals.ts';
export type { ProxyServerOptions } from './state.ts';

export function createProxyServer(options: ProxyServerOptions) {
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
  const s: ProxyState = {
    options,
    gateway: options.gateway,
    maxBodyBytes: options.maxBodyBytes ?? 32 * 1024 * 1024,
    idleMs: options.idleMs ?? 300_000,
    callers: new WeakMap(),
    inside: new WeakMap(),
    intercepted,
  };
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

  server.on('connect', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    void onConnect(s, req, client, head).catch(() => client.destroy());
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    void onRequest(s, req, res).catch(() => res.destroy());
  });
  intercepted.on('request', (req: IncomingMessage, res: ServerResponse) => {
    void onInterceptedRequest(s, req, res).catch(() => res.destroy());
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
      s.callers.set(connection, caller);
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
