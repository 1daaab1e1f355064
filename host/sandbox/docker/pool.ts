// The warm pool: started, attached containers (verified by the node's warm hook) that no agent owns yet, so that
// create() assigns one in milliseconds. Invariants: never more than `size` ready + in flight;
// refill is single-flight and runs in the background; close() discards ready items and stops
// refilling (a container being made when close() runs is discarded when it arrives); a ready item
// whose attachment closes (its container was removed or stopped behind our back) leaves the pool
// at once, is discarded, and a fresh one is made in its place.

import type Docker from 'dockerode';
import type { SandboxdChannel } from '../nodes/types.ts';
import type { WorkspaceMount } from './workspaces.ts';

export interface PoolItem {
  container: Docker.Container;
  /** The open channel to its sandboxd (its close is how a removed or stopped container is noticed). */
  channel: SandboxdChannel;
  /** What the node's warm hook made on the channel (node-state.ts WarmHooks). */
  warm: unknown;
  workspace: WorkspaceMount;
}

export interface WarmPool {
  /** Ready items now. */
  readonly ready: number;
  /** A ready item, or undefined; always triggers a refill (REFILL_AFTER_TAKE_MS later). */
  take(): PoolItem | undefined;
  /** Resolves when the pool is full (or refilling failed). */
  filled(): Promise<void>;
  close(): Promise<void>;
}

/** How long after a take the pool starts making the item that replaces it. */
export const REFILL_AFTER_TAKE_MS = 250;

export const createWarmPool = (o: {
  size: number;
  make: () => Promise<PoolItem>;
  discard: (item: PoolItem) => Promise<void>;
  onError: (e: unknown) => void;
}): WarmPool => {
  const items: PoolItem[] = [];
  let closed = false;
  let filling: Promise<void> | undefined;

  /** Drops a ready item whose container went away, and makes another. */
  const watch = (item: PoolItem): void => {
    void item.channel.closed.then(() => {
      const at = items.indexOf(item);
      if (at < 0) return; // taken or being discarded: not the pool's any more
      items.splice(at, 1);
      void o.discard(item).catch(o.onError);
      void refill();
    });
  };

  const refill = (): Promise<void> => {
    if (filling || closed || o.size <= 0) return filling ?? Promise.resolve();
    filling = (async () => {
      let failures = 0;
      while (!closed && items.length < o.size && failures < 3) {
        try {
          const item = await o.make();
          if (closed) await o.discard(item);
          else {
            items.push(item);
            watch(item);
          }
        } catch (e) {
          failures++;
          o.onError(e);
        }
      }
    })().finally(() => {
      filling = undefined;
    });
    return filling;
  };
  void refill();

  return {
    get ready() {
      return items.length;
    },
    take() {
      const item = items.shift();
      // Not at once: the refill forks mkfs and mount from this thread and boots a container's
      // sandboxd on the same cores, just when the sandbox taken gets its first calls (agent ready:
      // create, then its first command). A burst that empties the pool waits REFILL_AFTER_TAKE_MS more.
      setTimeout(() => void refill(), REFILL_AFTER_TAKE_MS).unref();
      return item;
    },
    filled: () => refill(),
    async close() {
      closed = true;
      await filling;
      for (const item of items.splice(0)) await o.discard(item).catch(o.onError);
    },
  };
};
