// A remote node's warm sessions, on the control plane's side (docs/nodes.md, "warm sessions"): for
// each of the node's pooled sandboxes nobody claimed, this control plane claims its channel
// (`open?pooled=`) and runs the provider's warm hook on it (its own sandboxd client: the session
// opened, verified and moved to the link ahead), so that ensure can hand an agent a session that is
// ready. Invariants: at most one claim per pooled id here, made one at a time in the background, and
// at most MAX_CLAIMS sessions held (a node's pool holds no more; a hostile node may list more); a
// session leaves when its channel closes (the node dropped the pooled sandbox, or went away) and is
// then dropped by the hook; take() hands a session over once, and only for the id the node placed;
// close() drops every session held and makes no more. The node is asked every `everyMs` only
// while its pool may hold some: once it says its pool's size is 0 (a `pooled` or capacity answer),
// the background asking stops until it says a size above 0 (refresh() asks whenever called).

import type { SandboxLimits } from '../../types.ts';
import type { SandboxdChannel, WarmHooks } from '../types.ts';
import { MAX_CLAIMS } from './protocol.ts';

export interface WarmSessionsOptions {
  /** The node's pooled ids nobody claimed, and its pool's size when it says (an older node does not). */
  list(): Promise<{ ids: string[]; size?: number }>;
  /** Claims one: its channel and the claim's token (fails when another claimed it first). */
  claim(id: string): Promise<{ channel: SandboxdChannel; claim: string }>;
  /** The pooled sandboxes' limits (the node's defaults). */
  limits: SandboxLimits;
  /** How often the node is asked for new pooled ids. */
  everyMs: number;
  onError: (error: unknown) => void;
}

export interface WarmSessions {
  /** Starts keeping sessions with the provider's hooks (once; later calls are ignored). */
  start(hooks: WarmHooks): void;
  /** Claims and warms every pooled sandbox the node lists now; resolves when done. */
  refresh(): Promise<void>;
  /** The claims held, for an ensure (NodeSandboxSpec.pooled) or the node's capacity. */
  claims(): Array<{ id: string; claim: string }>;
  /** The node's pool size as another answer said it (capacity): 0 stops the background asking, more resumes it. */
  sized(size: number | undefined): void;
  /** The session made for pooled sandbox `id`, handed over (gone from here); undefined if none. */
  take(id: string): unknown;
  close(): Promise<void>;
}

interface Held {
  claim: string;
  warm: unknown;
}

export function createWarmSessions(o: WarmSessionsOptions): WarmSessions {
  const held = new Map<string, Held>();
  let hooks: WarmHooks | undefined;
  let refreshing: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  /** The node said its pool holds none: nothing to claim, so no asking in the background. */
  let empty = false;

  // A tick while one is under way is skipped (callers of refresh() wait for a fresh list instead).
  const tick = (): void => {
    if (refreshing === undefined) void refresh().catch(() => {});
  };
  /** The background asking, on while started, open and the pool may hold some; true when it went on. */
  const poll = (): boolean => {
    const on = hooks !== undefined && !closed && !empty;
    if (!on) {
      clearInterval(timer);
      timer = undefined;
      return false;
    }
    if (timer !== undefined) return false;
    timer = setInterval(tick, o.everyMs);
    timer.unref();
    return true;
  };
  const sized = (size: number | undefined): boolean => {
    if (size === undefined) return false;
    empty = size === 0;
    return poll();
  };

  const warmOne = async (h: WarmHooks, id: string): Promise<void> => {
    const { channel, claim } = await o.claim(id);
    let warm: unknown;
    try {
      warm = await h.make(channel, o.limits);
    } catch (e) {
      channel.close(); // the node discards the pooled sandbox and makes another
      throw e;
    }
    if (closed) {
      await h.drop(warm);
      return;
    }
    held.set(id, { claim, warm });
    void channel.closed.then(() => {
      const entry = held.get(id);
      if (entry?.warm !== warm) return; // taken by an agent: its session now
      held.delete(id);
      void h.drop(warm).catch(o.onError);
    });
  };

  const refresh = (): Promise<void> => {
    const h = hooks;
    if (h === undefined || closed) return Promise.resolve();
    // One under way may have listed before the caller's pooled sandbox existed: another after it.
    if (refreshing !== undefined) return refreshing.then(refresh, refresh);
    refreshing = (async () => {
      const { ids, size } = await o.list();
      sized(size);
      for (const id of ids) {
        // No pool holds more (DSH_POOL_SIZE): a node listing more gets no more sessions held here.
        if (closed || held.size >= MAX_CLAIMS) return;
        if (held.has(id)) continue;
        // Another control plane may claim it first: that one is its own, not a failure here.
        await warmOne(h, id).catch((e: unknown) => {
          if ((e as { code?: string }).code !== 'SANDBOX_UNAVAILABLE') o.onError(e);
        });
      }
    })().finally(() => {
      refreshing = undefined;
    });
    return refreshing;
  };

  return {
    start(h) {
      if (hooks !== undefined || closed) return;
      hooks = h;
      poll();
      void refresh().catch(() => {});
    },
    refresh,
    claims: () => [...held].map(([id, { claim }]) => ({ id, claim })),
    sized(size) {
      // The pool came back (a node restarted with one): its sandboxes are listed at once.
      if (sized(size)) tick();
    },
    take(id) {
      const entry = held.get(id);
      if (entry === undefined) return undefined;
      held.delete(id);
      return entry.warm;
    },
    async close() {
      closed = true;
      poll();
      await refreshing?.catch(() => {});
      const h = hooks;
      for (const { warm } of held.values()) await h?.drop(warm).catch(() => {});
      held.clear();
    },
  };
}
