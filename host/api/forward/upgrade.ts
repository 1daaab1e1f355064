// Forwarding a WebSocket upgrade (a terminal) to the replica that owns its agent, at the socket
// level: connect to the owner, write the head of the request the route decided on (end-to-end
// headers, the replica signature of ./sign.ts, the owner's Host), then pipe the two sockets both
// ways, the bytes the client sent past its head first. The owner's own handshake answer (101 with its subprotocol, or a
// JSON refusal) reaches the client unchanged, so nothing about the WebSocket is decided here.
// The route decision runs inside the Hono app (./route.ts), which @hono/node-server calls for an
// upgrade with the node request but without the socket's head bytes, and which writes a refusal to
// the socket once the app answers without a local WebSocket. upgradeTunnels closes both gaps: it
// keeps each upgrade's head where the middleware finds it, and makes node-server wait until a
// forwarded tunnel is over (the socket destroyed, so it writes nothing). Invariants: a tunnel ends
// both sockets together; an owner that cannot be reached answers 503 OWNER_UNREACHABLE with
// Retry-After: 1 on the client's socket, as a plain HTTP answer (no WebSocket was opened); an owner
// found gone (the target's signal: its lease ran out) ends the tunnel, or refuses it before it is made.
import type { IncomingMessage, Server } from 'node:http';
import { connect as netConnect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import { connectDeadline } from './deadline.ts';
import { connectionNamed, type ForwardTarget, isHopHeader, type ReplicaSigner } from './request.ts';
import { forwardHeaders, signedTarget } from './sign.ts';

export interface ForwardUpgradeOptions {
  replica: ReplicaSigner;
  /** The client's address as this replica counts it, '' when none. */
  client: string;
  /** Default 2000 ms. */
  connectTimeoutMs?: number;
  now?: () => number;
}

/** An HTTP answer written straight on a socket that never became a WebSocket. */
const refuseOnSocket = (socket: Duplex, replicaId: string): void => {
  if (socket.destroyed) return;
  const body = JSON.stringify({
    error: {
      code: 'OWNER_UNREACHABLE',
      message: `The replica that owns this agent (${replicaId}) did not answer; retry in a moment.`,
    },
  });
  socket.end(
    `HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n${body}`,
  );
};

/** An upgrade request as it is sent on: its method, URL (path and query count) and header fields. */
export interface UpgradeLine {
  method: string;
  url: string;
  /** In order, repeats kept; names in any case. */
  headers: Iterable<readonly [string, string]>;
}

/** The request line and fields of a node request. */
const lineOf = (req: IncomingMessage): UpgradeLine => {
  const raw = req.rawHeaders;
  const headers: [string, string][] = [];
  for (let i = 0; i < raw.length; i += 2) headers.push([raw[i] as string, raw[i + 1] as string]);
  // Joined, not resolved: a request target of `//host/path` is a path here, not another host.
  const target = req.url ?? '/';
  return {
    method: req.method ?? 'GET',
    url: target.startsWith('/') ? `http://replica.invalid${target}` : target,
    headers,
  };
};

/** The upgrade request's head as the owner gets it. */
function headOf(line: UpgradeLine, base: URL, options: ForwardUpgradeOptions, path: string): string {
  const fields = [...line.headers];
  const fieldOf = (name: string) => fields.find(([n]) => n.toLowerCase() === name)?.[1];
  const named = connectionNamed(fieldOf('connection'));
  const lines = [`${line.method} ${path} HTTP/1.1`, `Host: ${base.host}`];
  for (const [name, value] of fields) {
    if (isHopHeader(name.toLowerCase(), named)) continue;
    lines.push(`${name}: ${value}`);
  }
  lines.push('Connection: Upgrade', `Upgrade: ${fieldOf('upgrade') ?? 'websocket'}`);
  const signed = forwardHeaders(options.replica.key, {
    replicaId: options.replica.id,
    timestamp: (options.now ?? Date.now)(),
    method: line.method,
    target: path,
    client: options.client,
  });
  for (const [name, value] of Object.entries(signed)) lines.push(`${name}: ${value}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/**
 * Tunnels the upgrade `req` (its `socket`, and the `head` bytes read past its head) to `target`;
 * resolves once both sockets are closed. Never throws: failures end the client's socket.
 */
export function forwardUpgrade(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  target: ForwardTarget,
  options: ForwardUpgradeOptions,
): Promise<void> {
  return tunnel(lineOf(req), socket, head, target, options);
}

/** Sends `line` to `target` on a new connection and pipes it and `socket` both ways. */
function tunnel(
  line: UpgradeLine,
  socket: Duplex,
  head: Buffer,
  target: ForwardTarget,
  options: ForwardUpgradeOptions,
): Promise<void> {
  // The owner was found gone before the tunnel was made: nothing to connect to.
  if (target.signal?.aborted === true) {
    refuseOnSocket(socket, target.replicaId);
    return Promise.resolve();
  }
  const base = new URL(target.url);
  const path = signedTarget(line.url);
  const host = base.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = Number(base.port || (base.protocol === 'https:' ? 443 : 80));
  const upstream: Socket =
    base.protocol === 'https:'
      ? tlsConnect({ host, port, servername: host, ALPNProtocols: ['http/1.1'] })
      : netConnect({ host, port });
  upstream.setNoDelay(true);
  if ('setNoDelay' in socket && typeof socket.setNoDelay === 'function') (socket as Socket).setNoDelay(true);
  let connected = false;
  const deadline = connectDeadline(options.connectTimeoutMs ?? 2_000, () =>
    upstream.destroy(new Error('connect timed out')),
  );
  upstream.once(base.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
    deadline.cancel();
    connected = true;
    upstream.write(headOf(line, base, options, path));
    if (head.length > 0) upstream.write(head);
    upstream.pipe(socket);
    socket.pipe(upstream);
  });
  // The owner found gone (its lease ran out while it was silent: paused, cut off) ends the tunnel,
  // as it ends a forwarded request: its TCP connection may stay open and say nothing for good.
  const gone = (): void => {
    if (!connected) return void upstream.destroy(new Error('the owner is gone'));
    upstream.destroy();
    socket.destroy();
  };
  target.signal?.addEventListener('abort', gone, { once: true });
  return new Promise<void>((resolve) => {
    upstream.once('error', () => {
      if (!connected) refuseOnSocket(socket, target.replicaId);
      else socket.destroy();
    });
    upstream.once('close', () => {
      deadline.cancel();
      target.signal?.removeEventListener('abort', gone);
      if (connected) socket.destroy();
    });
    // Errors end the tunnel through 'close'; without this listener one would be thrown.
    socket.on('error', () => upstream.destroy());
    if (socket.destroyed) {
      upstream.destroy();
      resolve();
      return;
    }
    socket.once('close', () => {
      upstream.destroy();
      resolve();
    });
  });
}

/** Each upgrade's head bytes, kept for the middleware (the Hono app sees only the request). */
const heads = new WeakMap<IncomingMessage, Buffer>();
/** Upgrades the middleware took over, until their tunnel is over. */
const tunnels = new WeakMap<IncomingMessage, Promise<void>>();

type Fetch = (request: Request, env: unknown) => Response | Promise<Response>;

/**
 * The app's answer to an upgrade, once any tunnel it started is over: node-server writes a refusal
 * on an upgrade the app answered without a local WebSocket unless the socket is gone by then.
 */
async function holdTunnel(
  incoming: IncomingMessage,
  answer: Response | Promise<Response>,
): Promise<Response> {
  const response = await answer;
  const tunnel = tunnels.get(incoming);
  if (tunnel !== undefined) await tunnel;
  return response;
}

/**
 * The hooks that let the forwarding middleware take an upgrade's socket: `fetch` wraps the app's
 * (pass it to @hono/node-server's serve), and `attach(server)` wraps the server's upgrade listener
 * (call it once the server is made). Without them, upgrades are only ever served here.
 */
export function upgradeTunnels<F extends Fetch>(fetch: F): { fetch: F; attach(server: Server): void } {
  const wrapped = ((request: Request, env: unknown) => {
    const incoming = (env as { incoming?: IncomingMessage } | undefined)?.incoming;
    // Only an upgrade can be tunnelled; every other request is the app's answer as it is.
    if (incoming?.headers.upgrade === undefined) return fetch(request, env);
    return holdTunnel(incoming, fetch(request, env));
  }) as F;
  return {
    fetch: wrapped,
    attach(server) {
      const listeners = server.listeners('upgrade') as ((...args: unknown[]) => void)[];
      if (listeners.length === 0) return; // a server that takes no upgrades tunnels none either
      server.removeAllListeners('upgrade');
      // One listener still: node-server answers refusals itself only when it is the only one.
      server.on('upgrade', function keepHead(req: IncomingMessage, socket: Duplex, head: Buffer) {
        heads.set(req, head);
        for (const listener of listeners) listener.call(server, req, socket, head);
      });
    },
  };
}

/**
 * Takes the upgrade of `incoming` (its socket) over and tunnels it to `target` as `line` says: the
 * request the route decided on, which is the node request's own unless an in-process caller (the
 * console's terminal page) made another over it. False when upgradeTunnels is not attached to the
 * server it came through (then nothing was done).
 */
export function tunnelUpgrade(
  incoming: IncomingMessage,
  line: UpgradeLine,
  target: ForwardTarget,
  options: ForwardUpgradeOptions,
): boolean {
  const head = heads.get(incoming);
  if (head === undefined) return false;
  heads.delete(incoming);
  tunnels.set(incoming, tunnel(line, incoming.socket, head, target, options));
  return true;
}
