// Admission of TCP connections to the HTTP server, so that connections nobody authenticated cannot
// lock out the tenants (issue 11: 1,100 idle connections without a key answered 0 of 10 keyed ones).
// A connection is unauthenticated until a request on it presents a valid key (claim()); then it
// belongs to that tenant until it closes. A connection from another replica (a request on it came
// forwarded, its signature checked: ./forward/verify.ts) belongs to no tenant and has no cap: the
// forwarding replica holds many tenants' requests on it in turn, and counted each tenant's own
// connections already.
// Invariants: at most `maxConnections` are open; unauthenticated ones hold at most
// `maxConnections - reserve` of them, and when a new connection would pass either bound the OLDEST
// unauthenticated connection is closed to make room (so idle attackers are displaced by newcomers,
// never the reverse), and when there is none, the oldest idle connection of the tenant holding the
// most, if it holds more than one (before, eight tenants at their 128 held the 1024 and a ninth
// tenant's connections were closed on arrival; a busy one, or an upgraded one, is never closed for
// a newcomer); a connection that sent no byte within `firstByteMs` is closed (the server's
// headersTimeout closes one that sent an incomplete head); one tenant holds at most `perTenant`
// connections, and a request past that answers 429 and closes its connection. Only terminal routes
// take a WebSocket upgrade (refuseStrayUpgrade); a refused upgrade answers with the app's JSON
// error body, as its Content-Type says (keepRefusalBody).
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Context, MiddlewareHandler } from 'hono';
import { SandboxError } from '../errors.ts';

export interface ConnectionLimits {
  /** Open connections at once. */
  maxConnections: number;
  /** Connections kept for clients that authenticated: unauthenticated ones use at most max - reserve. */
  reserve: number;
  /** A new connection that sent nothing by then is closed. */
  firstByteMs: number;
  /** Connections one tenant may hold at once. */
  perTenant: number;
}

export interface ConnectionStats {
  open: number;
  unauthenticated: number;
  /** Unauthenticated connections closed to make room for newer ones, since start. */
  evicted: number;
  /** Connections closed for sending nothing within firstByteMs, since start. */
  silent: number;
}

export interface ConnectionGuard {
  /**
   * Starts admitting the server's connections and closing the upgrades nobody takes; call once,
   * after its WebSocket support is installed, before it listens or right after.
   */
  attach(server: Server): void;
  /**
   * Binds the request's connection to the tenant; false when the tenant holds its cap already.
   * `upgraded`: the request upgrades it (a WebSocket), which then stays busy until it closes.
   */
  claim(socket: Socket, tenantId: string, upgraded?: boolean): boolean;
  stats(): ConnectionStats;
}

/** The holder of connections from other replicas (never a tenant id: those have no NUL). */
const REPLICAS = '\u0000replicas';

interface State {
  tenant: string | undefined;
  timer: NodeJS.Timeout | undefined;
  /** Requests on it not yet answered. */
  busy: number;
}

/**
 * The connection to close for a newcomer when all are claimed: an idle one (no request on it
 * unanswered) of the tenant holding the most, the oldest of its; never one of a tenant holding one,
 * nor a busy one (the newcomer may have no key: it must not cut a tenant's request or stream).
 */
function biggestHoldersIdle(states: ReadonlyMap<Socket, State>, perTenant: ReadonlyMap<string, number>) {
  let pick: Socket | undefined;
  let most = 1;
  for (const [socket, state] of states) {
    if (state.tenant === undefined || state.tenant === REPLICAS || state.busy > 0) continue;
    const held = perTenant.get(state.tenant) ?? 0;
    if (held > most) {
      most = held;
      pick = socket;
    }
  }
  return pick;
}

export const createConnectionGuard = (limits: ConnectionLimits): ConnectionGuard => {
  if (!(limits.reserve >= 0 && limits.reserve < limits.maxConnections))
    throw new SandboxError(
      'CONFIG_INVALID',
      `The connection reserve (${limits.reserve}) must be below the connection cap (${limits.maxConnections}).`,
    );
  const states = new Map<Socket, State>();
  /** Unauthenticated connections, oldest first (a Set keeps insertion order). */
  const unauthenticated = new Set<Socket>();
  const perTenant = new Map<string, number>();
  let evicted = 0;
  let silent = 0;

  const forget = (socket: Socket): void => {
    const state = states.get(socket);
    if (state === undefined) return;
    states.delete(socket);
    unauthenticated.delete(socket);
    clearTimeout(state.timer);
    if (state.tenant !== undefined) {
      const left = (perTenant.get(state.tenant) ?? 1) - 1;
      if (left <= 0) perTenant.delete(state.tenant);
      else perTenant.set(state.tenant, left);
    }
  };

  /**
   * Closes the oldest unauthenticated connection (or, with `claimed`, when there is none, the
   * biggest holder's); it stops counting at once, not at its 'close'.
   */
  const evictOldest = (claimed = false): boolean => {
    const oldest =
      unauthenticated.values().next().value ?? (claimed ? biggestHoldersIdle(states, perTenant) : undefined);
    if (oldest === undefined) return false;
    forget(oldest);
    evicted++;
    oldest.destroy();
    return true;
  };

  const admit = (socket: Socket): void => {
    if (states.size >= limits.maxConnections && !evictOldest(true)) {
      socket.destroy();
      return;
    }
    if (unauthenticated.size >= limits.maxConnections - limits.reserve) evictOldest();
    const state: State = { tenant: undefined, timer: undefined, busy: 0 };
    state.timer = setTimeout(() => {
      state.timer = undefined;
      if (socket.bytesRead === 0 && !socket.destroyed) {
        forget(socket);
        silent++;
        socket.destroy();
      }
    }, limits.firstByteMs).unref();
    states.set(socket, state);
    unauthenticated.add(socket);
    socket.once('close', () => forget(socket));
  };

  return {
    attach(server) {
      server.on('connection', admit);
      server.on('request', (req: IncomingMessage, res: ServerResponse) => {
        const state = states.get(req.socket);
        if (state === undefined) return;
        state.busy++;
        res.once('close', () => state.busy--);
      });
      closeRefusedUpgrades(server);
    },
    claim(socket, tenantId, upgraded = false) {
      const state = states.get(socket);
      if (state === undefined) return true; // not a connection of an attached server (in-process requests)
      // An upgraded connection (a terminal's WebSocket) carries its stream until it closes: never
      // idle (its 'request' events ended with the upgrade), so never closed for a newcomer.
      if (upgraded) state.busy++;
      if (state.tenant !== undefined) return true; // bound on an earlier request
      const held = perTenant.get(tenantId) ?? 0;
      if (held >= limits.perTenant && tenantId !== REPLICAS) return false;
      perTenant.set(tenantId, held + 1);
      state.tenant = tenantId;
      unauthenticated.delete(socket);
      return true;
    },
    stats: () => ({ open: states.size, unauthenticated: unauthenticated.size, evicted, silent }),
  };
};

type UpgradeListener = (request: IncomingMessage, socket: Socket, head: Buffer) => void;

/** The JSON error bodies of refused upgrades, kept by keepRefusalBody until the refusal is written. */
const refusalBodies = new WeakMap<IncomingMessage, string>();

/**
 * Keeps the body of a refused WebSocket upgrade (the app's JSON error): @hono/node-server writes
 * an upgrade's refusal itself, with the response's status and headers (Content-Type:
 * application/json) but `Content-Length: 0`, so the error its content type promises was lost.
 * Register before everything that can refuse.
 */
export const keepRefusalBody: MiddlewareHandler = async function keepRefusalBody(c, next) {
  await next();
  const env = c.env as { incoming?: IncomingMessage; outgoing?: ServerResponse } | undefined;
  if (env?.incoming === undefined || env.outgoing !== undefined || c.res.status < 400) return;
  refusalBodies.set(env.incoming, await c.res.clone().text());
};

/** Makes the refusal written on an upgrade's socket carry the body keepRefusalBody kept. */
const withRefusalBody = (request: IncomingMessage, socket: Socket): void => {
  const end = socket.end.bind(socket) as (chunk?: unknown, ...rest: unknown[]) => Socket;
  const empty = '\r\nContent-Length: 0\r\n';
  socket.end = ((chunk?: unknown, ...rest: unknown[]) => {
    const body = refusalBodies.get(request);
    if (
      body !== undefined &&
      typeof chunk === 'string' &&
      chunk.startsWith('HTTP/1.1 ') &&
      chunk.includes(empty)
    ) {
      refusalBodies.delete(request);
      const head = chunk.replace(empty, `\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`);
      return end(`${head}${body}`, ...rest);
    }
    return end(chunk, ...rest);
  }) as Socket['end'];
};

/**
 * Node hands every request with an Upgrade header to the server's 'upgrade' listeners and stops
 * managing its socket: no timeout applies to it any more, and nothing reads it, so not even its
 * client's end is noticed. @hono/node-server's listener takes `websocket` only and leaves any other
 * upgrade without an answer, and answers the upgrades it refuses (401, 404, 429) with `end()`,
 * which leaves them half open. Such sockets never closed, not even after their client went away,
 * and held graceful shutdown forever. So: any other upgrade is answered 400, and every upgrade
 * socket is destroyed once its last byte was written (ws does so for its own refusals).
 * Wraps the listeners registered so far (one stays one: hono answers its refusals only while it is
 * the only listener); call after the WebSocket support is installed.
 */
const closeRefusedUpgrades = (server: Server): void => {
  const listeners = server.listeners('upgrade') as UpgradeListener[];
  if (listeners.length === 0) return;
  server.removeAllListeners('upgrade');
  server.on('upgrade', (request: IncomingMessage, socket: Socket, head: Buffer) => {
    socket.once('finish', () => socket.destroy());
    withRefusalBody(request, socket);
    if (request.headers.upgrade?.toLowerCase() !== 'websocket') {
      socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    for (const listener of listeners) listener.call(server, request, socket, head);
  });
};

/**
 * Claims the connection of a Hono request served by @hono/node-server for the tenant; throws
 * RATE_LIMITED (and makes the response close the connection) when the tenant holds its cap.
 * Requests that did not come through a node server (app.request in tests) pass.
 */
export const claimConnection = (guard: ConnectionGuard | undefined, c: Context, tenantId: string): void => {
  const env = c.env as { incoming?: IncomingMessage; outgoing?: ServerResponse } | undefined;
  const socket = env?.incoming?.socket;
  if (guard === undefined || socket === undefined) return;
  const forwarded = (c.var as { forwardedBy?: string }).forwardedBy !== undefined;
  // Node's own verdict (set by its parser, not typed): an Upgrade header alone on a plain request
  // is not an upgrade, and its connection stays evictable.
  const upgraded = (env?.incoming as { upgrade?: boolean } | undefined)?.upgrade === true;
  if (guard.claim(socket, forwarded ? REPLICAS : tenantId, upgraded)) return;
  if (env?.outgoing) env.outgoing.shouldKeepAlive = false;
  throw new SandboxError(
    'RATE_LIMITED',
    'This tenant holds as many open connections as it may; reuse one (keep-alive) or close some.',
    { data: { retryAfterS: 1 } },
  );
};

/**
 * Refuses a request that arrived as a WebSocket upgrade (@hono/node-server runs the app for every
 * `Upgrade: websocket` request, with no `outgoing` response, and keeps only the answer's status):
 * mount it after the terminal routes, which are the only ones that upgrade. Without it an event
 * stream or a download answered there was never read nor cancelled, and held its tenant's
 * concurrency slot, its subscription or its sandbox stream for as long as the process ran.
 */
export const refuseStrayUpgrade: MiddlewareHandler = async function refuseStrayUpgrade(c, next) {
  const env = c.env as { incoming?: IncomingMessage; outgoing?: ServerResponse } | undefined;
  if (env?.incoming !== undefined && env.outgoing === undefined)
    throw new SandboxError(
      'BAD_REQUEST',
      'Only terminal sockets (/v1/agents/:id/terminals/:tid) take a WebSocket upgrade; send this request without Upgrade: websocket.',
    );
  await next();
};
