// The bytes each tenant's checkpoints hold on this control plane's disk, and its quota of them
// (CheckpointBounds.tenantMaxBytes: the tenant's `checkpointBytes` quota, else
// DSH_TENANT_CHECKPOINT_MAX_BYTES). Past the quota, the tenant's OLDEST checkpoints are dropped
// first, whichever of its agents holds them: checkpoints are short-lived undo, and the oldest is
// the least likely to be rolled back to, so an agent busy now does not lose its last minutes to
// an idle agent's hour-old pre-images (the per-agent bound still drops an agent's own oldest first).
// Counted from each index as written (./index-queue.ts tells every write), and from the indexes on
// disk, read once in the background from the tracker's creation (a start), which a check awaits
// (each index names its tenant since this count exists; an older one is counted once its agent next
// writes). With replicas, each control plane counts and bounds what its own disk
// holds (the agents whose families it owns): the quota bounds a tenant on every disk alike.
// Invariants: a count from a write is never replaced by the start's read of an older index; each
// drop is a turn of the victim agent (its index written, its blobs released in it), one at a time,
// never inside another agent's turn (no turn waits on another agent's), and only while the tenant is
// still over its quota when that turn comes; dropping never fails the call that asked for it (the
// caller catches), and never drops the checkpoint it is making room for.
import type { IndexQueue } from './index-queue.ts';
import type { CheckpointStore } from './store.ts';
import { trim } from './trim.ts';
import type { Checkpoint, CheckpointIndex } from './types.ts';

/** What one agent's index holds, as counted. */
interface Held {
  tenantId: string;
  bytes: number;
  /** When its oldest checkpoint that holds bytes was made (Infinity: none holds bytes). */
  oldest: number;
}

export interface TenantLedger {
  /** Counts the agent's index as just written. */
  written(agentId: string, index: CheckpointIndex): void;
  /** The agent's checkpoints are gone (its deletion). */
  forget(agentId: string): void;
  /** Bytes the tenant's checkpoints hold here (the indexes on disk counted first, once). */
  bytes(tenantId: string): Promise<number>;
  /**
   * Drops the tenant's oldest checkpoints, one turn of the agent holding each, until its bytes are
   * within `maxBytes`; never `keep` (the checkpoint just made). Resolves to how many were dropped.
   */
  fit(
    tenantId: string,
    maxBytes: number,
    keep: { agentId: string; seq: number },
    turn: IndexQueue['turn'],
  ): Promise<number>;
}

const heldOf = (tenantId: string, entries: readonly Checkpoint[]): Held => {
  let bytes = 0;
  let oldest = Number.POSITIVE_INFINITY;
  for (const entry of entries) {
    bytes += entry.bytes;
    if (entry.bytes > 0 && entry.at < oldest) oldest = entry.at;
  }
  return { tenantId, bytes, oldest };
};

export function createTenantLedger(store: CheckpointStore): TenantLedger {
  const byAgent = new Map<string, Held>();
  const byTenant = new Map<string, Set<string>>();
  /** Each tenant's bytes: the sum of its agents' in byAgent (kept with it, so a call's check costs no sum). */
  const totals = new Map<string, number>();

  function set(agentId: string, held: Held | undefined): void {
    const before = byAgent.get(agentId);
    if (before !== undefined) {
      byTenant.get(before.tenantId)?.delete(agentId);
      totals.set(before.tenantId, (totals.get(before.tenantId) ?? 0) - before.bytes);
    }
    if (held === undefined) {
      byAgent.delete(agentId);
      return;
    }
    byAgent.set(agentId, held);
    const agents = byTenant.get(held.tenantId) ?? new Set<string>();
    byTenant.set(held.tenantId, agents);
    agents.add(agentId);
    totals.set(held.tenantId, (totals.get(held.tenantId) ?? 0) + held.bytes);
  }

  /** The indexes on disk not counted from a write yet; one that cannot be read is left out. */
  async function load(): Promise<void> {
    for (const agentId of (await store.agents?.().catch(() => [])) ?? []) {
      if (byAgent.has(agentId)) continue;
      const index = await store.read(agentId).catch(() => undefined);
      // A write counted meanwhile is newer than what was read.
      if (index?.tenantId !== undefined && !byAgent.has(agentId))
        set(agentId, heldOf(index.tenantId, index.entries));
    }
  }
  // Begun at once, so the first tracked call after a start rarely waits for it.
  const loaded = load();
  const ready = (): Promise<void> => loaded;
  const total = (tenantId: string): number => totals.get(tenantId) ?? 0;
  /** The tenant's agent holding its oldest checkpoint with bytes. */
  const oldestHolder = (tenantId: string): string | undefined => {
    let found: string | undefined;
    let oldest = Number.POSITIVE_INFINITY;
    for (const agentId of byTenant.get(tenantId) ?? []) {
      const at = byAgent.get(agentId)?.oldest ?? Number.POSITIVE_INFINITY;
      if (at < oldest) [found, oldest] = [agentId, at];
    }
    return found;
  };

  return {
    written(agentId, index) {
      if (index.tenantId !== undefined) set(agentId, heldOf(index.tenantId, index.entries));
    },
    forget: (agentId) => set(agentId, undefined),
    async bytes(tenantId) {
      await ready();
      return total(tenantId);
    },
    async fit(tenantId, maxBytes, keep, turn) {
      await ready();
      let dropped = 0;
      while (total(tenantId) > maxBytes) {
        const victim = oldestHolder(tenantId);
        if (victim === undefined) break;
        const made = await turn(victim, async (index) => {
          // Within it by now (another fit dropped, an agent was deleted while this waited for the
          // victim's turn): nothing more goes.
          if (total(tenantId) <= maxBytes) return { value: 0 };
          const entry = index.entries.find((e) => e.bytes > 0);
          if (entry !== undefined && victim === keep.agentId && entry.seq === keep.seq) return { value: 0 };
          if (entry === undefined) {
            // Counted from an index no longer on disk (its agent deleted while the start's count
            // read it): counted again from what is, so the next round picks another.
            set(victim, index.tenantId === undefined ? undefined : heldOf(index.tenantId, index.entries));
            return { value: -1 };
          }
          const bytes = index.entries.reduce((sum, e) => sum + e.bytes, 0);
          // Through its oldest entry holding bytes (marks before it go with it, as the agent's bound does).
          const before = index.entries.length;
          const freed = trim(index, { maxCount: Number.MAX_SAFE_INTEGER, maxBytes: bytes - entry.bytes });
          return { index, value: before - index.entries.length, ...freed };
        });
        if (made === 0) break; // within the quota, or its oldest is the checkpoint made room for
        if (made > 0) dropped += made;
      }
      return dropped;
    },
  };
}
