// A remote node, on the control plane's side (docs/nodes.md): SandboxNode over the node protocol
// (protocol.ts) to a `dsh-node` at an https URL, with this control plane's client certificate; the
// node's certificate must be signed by the cluster's CA and name the URL's host. `open` and `link`
// give the upgraded TLS socket itself as the pipe, so the sandboxd client (the control plane's own)
// speaks to sandboxd through it and validates every frame as it does locally.
// Invariants: a node that cannot be reached fails the call with NODE_UNREACHABLE naming the node
// (no call waits past its deadline); an error the node answers keeps its code. Warm sessions
// (warm.ts): once the provider gives its warm hooks (warmWith) and the node serves pooled channels
// (`info` lists `pooled`), this control plane keeps a verified session with each pooled sandbox it
// claimed, and ensure hands the agent the one the node placed; a node without them (an older one)
// is served as before: its pool's sandboxes are connected after `ensure`, like any other. The
// pool's ready count this side reads (capacity, pool.ready) is what this control plane can use:
// `capacity` and `filled` present its claims, and the node counts those and the unclaimed ones.

import { PassThrough } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { SandboxError } from '../../../errors.ts';
import { agentSlug } from '../../docker/containers.ts';
import { DEFAULT_RUNTIME } from '../../runtimes.ts';
import type { SandboxLimits } from '../../types.ts';
import type {
  AdoptOptions,
  LinkOffer,
  NodeCapacity,
  NodeSandboxSpec,
  Placed,
  SandboxdChannel,
  SandboxdPipe,
  SandboxNode,
} from '../types.ts';
import {
  ACCEPTED,
  adoptQuestionsOf,
  FEATURE_POOLED,
  HEADER_CHANNEL,
  HEADER_CLAIM,
  HEADER_LINK,
  HEADER_LINK_TOKEN,
  limitsOf,
  MAX_CLAIMS,
  PREFIX,
  PROTOCOL,
  pauseDoneOf,
  pooledIdsOf,
  poolSizeOf,
  runtimesOf,
  snapshotDoneOf,
} from './protocol.ts';
import { sweepOver } from './snapshot-sweep.ts';
import { createTransport, type Transport, type TransportOptions } from './transport.ts';
import { createWarmSessions, type WarmSessions } from './warm.ts';

export type RemoteNodeOptions = TransportOptions & {
  /** How often the node is asked for pooled sandboxes to warm (warm.ts). Default 1000 ms. */
  warmEveryMs?: number;
};

export type RemoteNode = SandboxNode<unknown>;

/** A node's `info` as it may come: every field is checked before use. */
interface Info {
  protocol: unknown;
  defaults: unknown;
  maxima: unknown;
  ready: unknown;
  /** What the node serves beyond protocol 1's calls (an older node lists none). */
  features?: unknown;
}

/** Connects (asks the node's info, which checks both certificates and the protocol) and gives the node. */
export async function connectRemoteNode(options: RemoteNodeOptions): Promise<RemoteNode> {
  const t = createTransport(options);
  const call = t.call.bind(t);
  const link = (channelId: string) => linkOf(t, options.name, channelId);
  const info = await call<Info>('info');
  const { defaults, maxima } = checkedInfo(options.name, info);
  // A count only (poolSizeOf): the pools' sum is a /metrics gauge, which a string or NaN breaks.
  let ready = poolSizeOf(info.ready) ?? 0;
  const agent = (agentId: string) => ({ agentId });
  const warm =
    Array.isArray(info.features) && info.features.includes(FEATURE_POOLED)
      ? warmSessionsOf(t, defaults, options)
      : undefined;
  const upgradeOpen = async (q: string): Promise<SandboxdChannel & { claim: string }> => {
    const { socket, headers } = await t.upgrade(`${PREFIX}open?${q}`);
    const id = String(headers[HEADER_CHANNEL] ?? '');
    return {
      ...socketPipe(socket),
      ...(headers[HEADER_LINK] === '1' ? { link: () => link(id) } : {}),
      claim: String(headers[HEADER_CLAIM] ?? ''),
    };
  };
  return {
    name: options.name,
    defaults,
    maxima,
    pool: {
      get ready() {
        return ready;
      },
      async filled() {
        ready =
          poolSizeOf((await call<{ ready?: unknown }>('filled', claimsOf(warm), 10 * 60_000)).ready) ?? 0;
        await warm?.refresh();
      },
    },
    ensure: (spec) =>
      warm === undefined ? call('ensure', spec, 5 * 60_000) : ensureWarm(t, warm, defaults, spec),
    warmWith: (hooks) => warm?.start(hooks),
    find: async (agentId) =>
      (
        await call<{ sandbox: null | { id: string; limits: SandboxLimits; tenantId?: string } }>(
          'find',
          agent(agentId),
        )
      ).sandbox ?? undefined,
    async open(agentId, openOptions = {}): Promise<SandboxdChannel> {
      const { claim: _, ...channel } = await upgradeOpen(
        `agent=${encodeURIComponent(agentId)}${openOptions.restart ? '&restart=1' : ''}`,
      );
      return channel;
    },
    state: async (agentId) =>
      (await call<{ state: 'running' | 'stopped' | 'absent' }>('state', agent(agentId))).state,
    stop: async (agentId) => {
      await call('stop', agent(agentId));
    },
    pause: async (agentId, mode) =>
      pauseDoneOf((await call<{ done?: unknown }>('pause', { ...agent(agentId), mode })).done),
    destroy: async (agentId) => {
      await call('destroy', agent(agentId), 5 * 60_000);
    },
    // A copy of a whole workspace image: minutes at worst on a slow disk.
    snapshot: async (agentId, id) =>
      snapshotDoneOf(await call('snapshot', { ...agent(agentId), id }, 10 * 60_000)),
    dropSnapshot: async (id) => {
      await call('dropSnapshot', { id });
    },
    sweepSnapshots: (recorded) => sweepOver(t, recorded),
    usage: async (agentId, usageOptions) =>
      (await call<{ usage: null | never }>('usage', { ...agent(agentId), options: usageOptions ?? {} }))
        .usage ?? undefined,
    adopt: (adoptOptions = {}) => adoptOver(t, adoptOptions),
    capacity: async () => {
      const c = await call<NodeCapacity>('capacity', claimsOf(warm)); // the pool's ready: what it can use
      ready = poolSizeOf(c.pool?.ready) ?? 0;
      warm?.sized(poolSizeOf(c.pool?.size));
      return { ...c, runtimes: runtimesOf(c.runtimes) };
    },
    close: async () => {
      await warm?.close();
      t.close();
    },
  };

  /** The node's warm sessions (warm.ts), claimed through `open?pooled=`. */
  function warmSessionsOf(tr: Transport, limits: SandboxLimits, o: RemoteNodeOptions): WarmSessions {
    return createWarmSessions({
      list: () => pooledOn(tr),
      claim: async (id) => {
        const { claim, ...channel } = await upgradeOpen(`pooled=${encodeURIComponent(id)}`);
        if (!/^[0-9a-f]{32}$/.test(claim)) {
          channel.close();
          throw new SandboxError('SANDBOX_UNAVAILABLE', `Node ${o.name} answered a claim without its token.`);
        }
        return { channel, claim };
      },
      limits,
      everyMs: o.warmEveryMs ?? 1000,
      onError: () => {},
    });
  }
}

/** How long each step of a node's adopt may take (it lists and removes containers). */
const ADOPT_MS = 5 * 60_000;

/**
 * A node's adopt in two steps, so that the node learns only what concerns its own containers: it
 * says what it needs the store's word on (`ask`: its legacy and leftover pool containers' ids, the
 * slugs of its agent containers old enough to judge), and gets the answers about those alone (the
 * ones `claim` and `assigned` name, the agents the store does not know), never the store's every
 * agent id and sandbox (before, every node was sent all of them, and past ~30k agents the body
 * passed the node's 1 MiB limit, so adopt failed). The first step carries `claim: 'ask'`, which a
 * node agent older than this refuses (INVALID_ARGUMENTS: not a list) rather than adopt with nothing
 * claimed (it would remove the pool containers a crash left assigned); placement passes it over.
 */
async function adoptOver(t: Transport, o: AdoptOptions): Promise<string[]> {
  const knownAt = o.knownAt ?? 0;
  const asked = adoptQuestionsOf(
    (
      await t.call<{ questions?: unknown }>(
        'adopt',
        { ask: true, claim: 'ask', ...(o.known === undefined ? {} : { knownAt }) },
        ADOPT_MS,
      )
    ).questions,
  );
  const claimed = new Set(o.claim ?? []);
  const assigned = o.assigned ?? new Map<string, string>();
  const known = o.known === undefined ? undefined : new Set([...o.known].map(agentSlug));
  const body = {
    claim: asked.sandboxes.filter((id) => claimed.has(id)),
    assigned: asked.sandboxes.flatMap((id) => {
      const agentId = assigned.get(id);
      return agentId === undefined ? [] : [id, agentId];
    }),
    replicas: o.replicas !== undefined,
    ...(known === undefined ? {} : { unknown: asked.agents.filter((slug) => !known.has(slug)), knownAt }),
  };
  return (await t.call<{ names: string[] }>('adopt', body, ADOPT_MS)).names;
}

/** The defaults and maxima of a node's `info`; CONFIG_INVALID for another protocol or limits that are not (limitsOf). */
function checkedInfo(name: string, info: Info): { defaults: SandboxLimits; maxima: SandboxLimits } {
  if (info.protocol !== PROTOCOL)
    throw new SandboxError(
      'CONFIG_INVALID',
      `Node ${name} speaks ${String(info.protocol).slice(0, 100)}, not ${PROTOCOL}.`,
    );
  const defaults = limitsOf(info.defaults);
  const maxima = limitsOf(info.maxima);
  if (defaults === undefined || maxima === undefined)
    throw new SandboxError(
      'CONFIG_INVALID',
      `Node ${name} answered limits that are not positive whole numbers; it is not served.`,
    );
  return { defaults, maxima };
}

/**
 * ensure with the warm sessions' claims, where the agent may have a pooled sandbox (the node's
 * default disk and runtime, no snapshot); the session of the pooled sandbox the node placed goes
 * with the answer. A claim the node no longer honours is skipped there (another sandbox is placed).
 */
async function ensureWarm(
  t: Transport,
  warm: WarmSessions,
  defaults: SandboxLimits,
  spec: NodeSandboxSpec,
): Promise<Placed<unknown>> {
  const pooled =
    spec.fromSnapshot === undefined &&
    (spec.runtime ?? DEFAULT_RUNTIME) === DEFAULT_RUNTIME &&
    spec.limits.diskBytes === defaults.diskBytes
      ? warm.claims()
      : [];
  const placed = await t.call<Placed<unknown>>(
    'ensure',
    { ...spec, ...(pooled.length === 0 ? {} : { pooled }) },
    5 * 60_000,
  );
  const session = placed.found ? undefined : warm.take(placed.id);
  return session === undefined ? placed : { ...placed, warm: session };
}

/** The node's unclaimed pooled ids, and its pool's size when it says (`pooled`). */
async function pooledOn(t: Transport): Promise<{ ids: string[]; size?: number }> {
  const { ids, size } = await t.call<{ ids?: unknown; size?: unknown }>('pooled');
  const sized = poolSizeOf(size);
  return { ids: pooledIdsOf(ids), ...(sized === undefined ? {} : { size: sized }) };
}

/** A call's body with the claims the warm sessions hold (none without them; an older node ignores them). */
const claimsOf = (warm: WarmSessions | undefined): { pooled?: Array<{ id: string; claim: string }> } => {
  const pooled = warm?.claims().slice(0, MAX_CLAIMS) ?? [];
  return pooled.length === 0 ? {} : { pooled };
};

/** The TLS socket as a pipe. */
const socketPipe = (socket: TLSSocket): SandboxdPipe => {
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => {
    socket.once('close', () => resolve());
  });
  return { input: socket, output: socket, closed, close: () => socket.destroy() };
};

/** The link of an open channel: its token, and the link once the node says sandboxd dialled. */
async function linkOf(t: Transport, name: string, channelId: string): Promise<LinkOffer> {
  const { socket, headers } = await t.upgrade(`${PREFIX}link?channel=${encodeURIComponent(channelId)}`);
  const token = String(headers[HEADER_LINK_TOKEN] ?? '');
  let settled = false;
  const accepted = new Promise<SandboxdPipe>((resolve, reject) => {
    const gone = (): void => {
      settled = true;
      reject(new SandboxError('SANDBOX_UNAVAILABLE', `Node ${name}: the link was not made.`));
    };
    socket.once('close', gone);
    socket.on('data', function first(chunk: Buffer) {
      socket.off('data', first);
      socket.off('close', gone);
      settled = true;
      if (chunk[0] !== ACCEPTED) {
        socket.destroy();
        return gone();
      }
      // What came after the byte, then the rest, through a stream of its own (the socket's
      // flowing state is not handed over half-read).
      socket.pause();
      const input = new PassThrough();
      if (chunk.length > 1) input.write(chunk.subarray(1));
      socket.pipe(input);
      resolve({ ...socketPipe(socket), input });
    });
  });
  accepted.catch(() => {});
  return {
    token,
    accepted,
    close: () => {
      if (!settled) socket.destroy();
    },
  };
}
