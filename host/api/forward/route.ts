// The router's slot in the app: a route function (ownership decides it; this module only acts on
// it) says per request whether this replica serves it or which replica does, and the middleware
// serves it here, forwards it (./request.ts), or tunnels its WebSocket upgrade (./upgrade.ts).
// Invariants: a request another replica forwarded is never forwarded again (a route that still
// points elsewhere answers 503 OWNER_MOVED with Retry-After: 1, so two replicas that disagree about
// an owner cannot bounce a request between them); the forwarder holds one keep-alive agent per
// target origin, closed by close().
import type { IncomingMessage } from 'node:http';
import type { BlockList } from 'node:net';
import type { Context, MiddlewareHandler } from 'hono';
import { SandboxError } from '../../errors.ts';
import { clientSource } from '../client-address.ts';
import type { ApiEnv } from '../env.ts';
import { agentFor, type ForwardTarget, forwardRequest, type ReplicaSigner } from './request.ts';
import { tunnelUpgrade } from './upgrade.ts';

/** Where a request is served. */
export type Route =
  /** This replica owns the agent (or the request concerns no agent): the routes answer it. */
  | { kind: 'local' }
  /** Replica `replicaId`, reachable at `url` (its DSH_REPLICA_URL), owns it: forward it there. */
  | { kind: 'forward'; url: string; replicaId: string; signal?: AbortSignal };

/** What the route function is told beside the request's context (its tenant is set). */
export interface RouteRequest {
  /** Another replica sent it here; the middleware never forwards those again. */
  forwarded: boolean;
  /** The `:id` of /v1/agents/:id/…; undefined for requests that address no agent. */
  agentId: string | undefined;
}

/** Decides a request's route, after its tenant's key was checked and before its agent is loaded. */
export type RouteOf = (c: Context<ApiEnv>, request: RouteRequest) => Route | Promise<Route>;

const AGENT_PATH = /^\/v1\/agents\/([^/]+)/;

const agentIdOf = (path: string): string | undefined => {
  const segment = AGENT_PATH.exec(path)?.[1];
  if (segment === undefined) return undefined;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
};

export interface ForwarderOptions {
  replica: ReplicaSigner;
  /** Proxies whose X-Forwarded-For names the client (DSH_TRUSTED_PROXIES); default none. */
  trustedProxies?: BlockList;
  /** How long connecting to an owner may take before it counts as unreachable. Default 2000 ms. */
  connectTimeoutMs?: number;
}

export interface Forwarder {
  /** The owner's answer to the request of `c` (streaming), or OWNER_UNREACHABLE. */
  request(c: Context<ApiEnv>, target: ForwardTarget): Promise<Response>;
  /** Tunnels the WebSocket upgrade of `c` to `target`; false when this server cannot (see upgradeTunnels). */
  upgrade(c: Context<ApiEnv>, target: ForwardTarget): boolean;
  /** Closes the kept-alive connections to the owners. */
  close(): void;
}

export function createForwarder(options: ForwarderOptions): Forwarder {
  const { replica, trustedProxies, connectTimeoutMs = 2_000 } = options;
  const agents = new Map<string, ReturnType<typeof agentFor>>();
  const agentOf = (url: string) => {
    const origin = new URL(url).origin;
    let agent = agents.get(origin);
    if (agent === undefined) {
      agent = agentFor(origin);
      agents.set(origin, agent);
    }
    return agent;
  };
  const clientOf = (c: Context<ApiEnv>): string => clientSource(c.env, trustedProxies) ?? '';
  return {
    request(c, target) {
      return forwardRequest(c, target, {
        replica,
        client: clientOf(c),
        agent: agentOf(target.url),
        connectTimeoutMs,
      });
    },
    upgrade(c, target) {
      const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
      if (incoming === undefined) return false;
      const { method, url, headers } = c.req.raw;
      return tunnelUpgrade(incoming, { method, url, headers }, target, {
        replica,
        client: clientOf(c),
        connectTimeoutMs,
      });
    },
    close() {
      for (const agent of agents.values()) agent.destroy();
      agents.clear();
    },
  };
}

const isWebSocketUpgrade = (c: Context): boolean => c.req.header('upgrade')?.toLowerCase() === 'websocket';

export interface ForwardByRouteOptions {
  route: RouteOf;
  forwarder: Forwarder;
}

/** Serves, forwards or tunnels each request as `route` decides. */
export const forwardByRoute = (options: ForwardByRouteOptions): MiddlewareHandler<ApiEnv> => {
  const { route, forwarder } = options;
  return async function forwardByRoute(c, next) {
    const forwarded = c.get('forwardedBy') !== undefined;
    const decided = await route(c, { forwarded, agentId: agentIdOf(c.req.path) });
    if (decided.kind === 'local') return next();
    if (forwarded)
      throw new SandboxError(
        'OWNER_MOVED',
        'The replica this request was forwarded to no longer owns the agent; retry in a moment.',
        { data: { retryAfterS: 1 } },
      );
    const target = {
      url: decided.url,
      replicaId: decided.replicaId,
      ...(decided.signal === undefined ? {} : { signal: decided.signal }),
    };
    if (!isWebSocketUpgrade(c)) return forwarder.request(c, target);
    if (!forwarder.upgrade(c, target))
      throw new SandboxError(
        'INTERNAL',
        'This server cannot forward WebSocket upgrades (upgradeTunnels is not attached).',
      );
    // What node-server makes of this answer does not matter: it waits for the tunnel to close
    // the socket (upgradeTunnels), and the owner's own handshake answer is what the client reads.
    return c.body(null, 200);
  };
};

/** What the app takes for replicas (AppDeps.replicas). */
export interface ReplicaDeps {
  /** replicaKey(secretsKey): forwarded requests are checked with it (./verify.ts). */
  key: Buffer;
  /** Where each tenant-scoped request and terminal upgrade is served; none: all here. */
  route?: RouteOf;
  /** How requests are forwarded (createForwarder); needed with `route`. */
  forwarder?: Forwarder;
  /**
   * Who this process is among the replicas (what its keyed batches are claimed under), and whether
   * another holder still runs: a retry of a batch a live replica runs waits for it (api/idempotency.ts).
   */
  holder?: { id: string; alive(holder: string): Promise<boolean> };
}

/** The routing middleware for the app's slot; undefined (no slot) without a route. */
export const routeSlot = (replicas: ReplicaDeps | undefined): MiddlewareHandler<ApiEnv> | undefined => {
  if (replicas?.route === undefined) return undefined;
  if (replicas.forwarder === undefined)
    throw new SandboxError('CONFIG_INVALID', 'A replica route needs a forwarder (createForwarder).');
  return forwardByRoute({ route: replicas.route, forwarder: replicas.forwarder });
};
