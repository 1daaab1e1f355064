// The warm pool: started, attached containers (verified by the node's warm hook) that no agent owns yet, so that
// create() assigns one in milliseconds. Invariants: never more than `size` ready + in flight;
// refill is single-flight and runs in the background; close() discards ready items and stops
// refilling (a container being made when close() runs is discarded when it arrives); a ready item
// whose attachment closes (its container was removed or stopped behind our back) leaves the pool
// at once, is discarded, and a fresh one is made in its place. A remote control plane may claim a
// ready item's channel (claim(): its warm session there, nodes/remote/warm.ts): a claimed item goes
// to no other claim and to no take() but one that presents its claim's token. A take for a
// tenant (`taker`, given while several tenants are about: provision.ts) that was one of the last
// `size` takers leaves a quarter of the pool (host/shares.ts reserveFor) ready for tenants that
// took none of them: one tenant's burst of creates gets cold ones past it, and the next tenant's
// agent a warm one (round 5 of the adversarial pass: shared capacity keeps room for newcomers).

import { randomBytes } from 'node:crypto';
import type Docker from 'dockerode';
import { reserveFor } from '../../shares.ts';
import type { SandboxdChannel } from '../nodes/types.ts';
import type { WorkspaceMount } from './workspaces.ts';

export interface PoolItem {
  container: Docker.Container;
  /** The open channel to its sandboxd (its close is how a removed or stopped container is noticed). */
  channel: SandboxdChannel;
  /** What the node's warm hook made on the channel (node-state.ts WarmHooks). */
  warm: unknown;
  workspace: WorkspaceMount;
  /** The token of the claim on its channel, once a control plane claimed it (claim()). */
  claim?: string;
}

/** A claim a take() presents: the pooled item's id (its container's) and the claim's token. */
export interface PoolClaim {
  id: string;
  claim: string;
}

export interface WarmPool {
  /** Ready items now. */
  readonly ready: number;
  /**
   * A ready item, or undefined; always triggers a refill (REFILL_AFTER_TAKE_MS later). One of
   * `claims` (id and token both match) first, else one nobody claimed. `taker`: the tenant it is
   * for, when others are about; one of the last `size` takers gets none that would leave fewer
   * than reserveFor(size) ready for the others.
   */
  take(claims?: readonly PoolClaim[], taker?: string): PoolItem | undefined;
  /** The ids of the ready items nobody claimed. */
  unclaimed(): string[];
  /** Ready items the holder of `claims` can be given: those nobody claimed, and its own (id and token both match). */
  readyFor(claims: readonly PoolClaim[]): number;
  /** Claims the ready, unclaimed item `id`: its channel and the claim's token; undefined if none. */
  claim(id: string): { channel: PoolItem['channel']; claim: string } | undefined;
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
  /** The tenants of the last `size` takes that named one, oldest first. */
  const recent: string[] = [];
  const keep = reserveFor(o.size);
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

  const readyFor = (claims: readonly PoolClaim[]): number =>
    items.filter((i) => i.claim === undefined || heldBy(i, claims)).length;
  /** The ready item a take presenting `claims` gets: one of its claims, else one nobody claimed; -1: none. */
  const indexFor = (claims: readonly PoolClaim[]): number => {
    const at = items.findIndex((i) => heldBy(i, claims));
    return at >= 0 ? at : items.findIndex((i) => i.claim === undefined);
  };

  return {
    get ready() {
      return items.length;
    },
    take(claims = [], taker) {
      const kept = taker !== undefined && recent.includes(taker) && readyFor(claims) - 1 < keep;
      const index = kept ? -1 : indexFor(claims);
      const [item] = index >= 0 ? items.splice(index, 1) : [];
      if (item !== undefined && taker !== undefined && recent.push(taker) > o.size) recent.shift();
      // Not at once: the refill forks mkfs and mount from this thread and boots a container's
      // sandboxd on the same cores, just when the sandbox taken gets its first calls (agent ready:
      // create, then its first command). A burst that empties the pool waits REFILL_AFTER_TAKE_MS more.
      setTimeout(() => void refill(), REFILL_AFTER_TAKE_MS).unref();
      return item;
    },
    unclaimed: () => items.filter((i) => i.claim === undefined).map((i) => i.container.id),
    readyFor,
    claim(id) {
      const item = items.find((i) => i.container.id === id && i.claim === undefined);
      if (item === undefined) return undefined;
      item.claim = randomBytes(16).toString('hex');
      return { channel: item.channel, claim: item.claim };
    },
    filled: () => refill(),
    async close() {
      closed = true;
      await filling;
      for (const item of items.splice(0)) await o.discard(item).catch(o.onError);
    },
  };
};

/** Whether `item` was claimed with one of `claims` (its id and the claim's token both match). */
const heldBy = (item: PoolItem, claims: readonly PoolClaim[]): boolean =>
  item.claim !== undefined && claims.some((c) => c.claim === item.claim && c.id === item.container.id);
