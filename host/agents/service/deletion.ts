// Deletion: once delete() has marked the agent deleting in this process (synchronously, before it
// asks the store to stamp it) nothing new starts for it here, and once the store took the stamp
// nothing runs for it any more: its tool scope fails closed (every call, inner ones included, is
// DENIED), its batches are aborted, its host requests cancelled, its deletion listeners (terminal
// sockets) told, its plugins stopped and removed, and no sandbox can be created for it; the
// sandbox is destroyed last. A removal
// that failed (an engine error, a crash before it) leaves the sandbox id in the record for
// reapDeleted(), run at start and again `reapRetryMs` after a failure.
// Across processes sharing the store (replicas), with the store's wake-up bus: a deletion is
// published as an `agent` wake-up once the store took the stamp, and every other process that
// hears it stops what runs for that agent there (deletedElsewhere: its lookup entry forgotten, its
// scope retired, its deletion listeners told, its batches aborted); the deleting process finishes
// the rest (requests, plugins, sandbox). After a resync every remembered agent is forgotten (a
// call of an agent deleted meanwhile is refused all the same: `gone` asks the store) and the
// agents running batches here are read again: those deleted meanwhile are stopped as above.

import type { RequestStore } from '../../requests/index.ts';
import type { SandboxProvider } from '../../sandbox/types.ts';
import type { AgentStore, WakeBus } from '../../store/index.ts';
import type { Agent } from '../types.ts';
import type { Batches } from './batches.ts';
import type { LiveAgents } from './live.ts';
import { type DeletionMarks, deletedError, getAgent } from './records.ts';
import type { SandboxBinding } from './sandbox.ts';

export interface Deletion {
  delete(tenantId: string, id: string): Promise<void>;
  reapDeleted(onError?: (agentId: string, error: unknown) => void): Promise<number>;
  onDeleted(agent: Agent, listener: () => void): () => void;
  /**
   * Stops what runs for an agent deleted by another process sharing the store (the `agent`
   * wake-up calls it; exported for a caller that learns of a deletion another way). Idempotent;
   * nothing when its delete runs here.
   */
  deletedElsewhere(id: string): void;
  /** Cancels the pending retry of reapDeleted() and stops hearing other processes (the service is closing). */
  stopRetrying(): void;
}

export interface DeletionOptions {
  agents: AgentStore;
  /** Forgets a remembered agent (records.ts AgentLookup) the moment it is marked deleted. */
  forget?: (id: string) => void;
  /** Forgets every remembered agent (the wake-up bus resynced). */
  forgetAll?: () => void;
  /** Where deletions are announced to, and heard from, other processes (Store.wake). Default: none. */
  wake?: Pick<WakeBus, 'publish' | 'subscribe' | 'onResync'>;
  requests: RequestStore;
  provider: SandboxProvider;
  marks: DeletionMarks;
  live: LiveAgents;
  batches: Batches;
  sandboxes: SandboxBinding;
  /** The service's plugin host: the agent's plugins are stopped and removed with it. */
  plugins?: { removeAgent(agent: Agent): Promise<void> };
  /** How long delete() waits for the agent's aborted batches before destroying the sandbox anyway. */
  graceMs: number;
  /** How much later a failed removal is tried again. */
  reapRetryMs: number;
  isClosing: () => boolean;
  /** Told once the agent is marked deleted (its schedules, its run and its mail go with it). */
  onDeleted?: (agentId: string, agent: Agent) => Promise<void>;
}

export function createDeletion(options: DeletionOptions): Deletion {
  const { agents, requests, provider, marks } = options;
  const listeners = new Map<string, Set<() => void>>();
  /** The pending retry of reapDeleted() after a failed removal (one at a time). */
  let retry: NodeJS.Timeout | undefined;

  async function remove(tenantId: string, id: string): Promise<void> {
    const agent = await getAgent(agents, tenantId, id);
    // A delete of it is already under way here: that one owns the mark.
    if (marks.deleting.has(id)) throw deletedError(id);
    // Marked before the store is asked: from here on nothing new starts for it in this process.
    marks.deleting.add(id);
    options.forget?.(id);
    let stamped = false;
    try {
      stamped = await agents.markDeleted(tenantId, id);
    } finally {
      if (!stamped) marks.deleting.delete(id);
    }
    if (!stamped) throw deletedError(id);
    try {
      const told = options.wake?.publish('agent', id); // other processes stop its work (stopHere)
      options.live.retire(id);
      // Started here, awaited below: its store work must not hold back the abort, and its failure
      // (the team's run and mail of the agent) must not keep the sandbox.
      const ended = options.onDeleted?.(id, agent).catch(() => undefined);
      notify(id);
      const stopped = options.batches.abortAgent(id, options.graceMs);
      const cancelled = cancelRequests(agent.sessionId);
      await Promise.all([stopped, ended, cancelled, told]);
      await options.plugins?.removeAgent(agent);
      await cancelRequests(agent.sessionId); // made by a body between the abort and its end
      await options.sandboxes.release(id);
      await provider.destroy(id).catch((e: unknown) => {
        retryReap();
        throw e;
      });
      // Only now: a delete that failed above leaves the id for reapDeleted() (retried, and at start).
      await agents.setSandboxId(id, undefined);
    } finally {
      marks.deleting.delete(id);
    }
  }

  async function cancelRequests(sessionId: string): Promise<void> {
    for (const request of await requests.list(sessionId, 'pending')) await requests.cancel(request.id);
  }

  const deletedElsewhere = (id: string) => stopHere(options, notify, id);
  const unsubscribe = hearOtherProcesses(options, deletedElsewhere);

  function notify(id: string): void {
    const set = listeners.get(id);
    listeners.delete(id);
    const told = [...(set ?? [])];
    set?.clear(); // so onDeleted's own check of the store tells none of them twice
    for (const listener of told) listener();
  }

  async function reapDeleted(onError?: (agentId: string, error: unknown) => void): Promise<number> {
    let removed = 0;
    for (const record of await agents.listAll({ includeDeleted: true })) {
      if (record.deletedAt === undefined || record.sandboxId === undefined) continue;
      try {
        await provider.destroy(record.id);
        await agents.setSandboxId(record.id, undefined);
        removed++;
      } catch (e) {
        onError?.(record.id, e);
      }
    }
    return removed;
  }

  function retryReap(): void {
    if (retry || options.isClosing()) return;
    retry = setTimeout(() => {
      retry = undefined;
      // Still failing, or the store's list failed (its rejection unheard would end the process): once more later.
      reapDeleted(() => retryReap()).catch(() => retryReap());
    }, options.reapRetryMs);
    retry.unref();
  }

  function onDeleted(agent: Agent, listener: () => void): () => void {
    if (marks.deleting.has(agent.id)) {
      listener();
      return () => {};
    }
    const set = listeners.get(agent.id) ?? new Set<() => void>();
    listeners.set(agent.id, set);
    set.add(listener);
    const unsubscribe = () => {
      set.delete(listener);
      if (set.size === 0 && listeners.get(agent.id) === set) listeners.delete(agent.id);
    };
    // Deleted elsewhere (the store says so): told once the store answered, unless told already.
    marks.gone(agent).then(
      (gone) => {
        if (gone && set.has(listener)) {
          unsubscribe();
          listener();
        }
      },
      () => undefined, // the store failed: a delete here still notifies
    );
    return unsubscribe;
  }

  return {
    delete: remove,
    reapDeleted,
    onDeleted,
    deletedElsewhere,
    stopRetrying() {
      clearTimeout(retry);
      unsubscribe();
    },
  };
}

/** An agent deleted by another process: what runs for it here stops (Deletion.deletedElsewhere). */
function stopHere(options: DeletionOptions, notify: (id: string) => void, id: string): void {
  options.forget?.(id);
  if (options.marks.deleting.has(id)) return; // deleted here: remove() does all of it
  options.live.retire(id);
  notify(id);
  // Settled within the grace or not, the batches were aborted; nothing awaits them here.
  void options.batches.abortAgent(id, options.graceMs);
}

/**
 * Hears other processes' deletions, and after a resync (deletions may have been missed) forgets
 * every remembered agent and stops those of the agents running batches here that the store no
 * longer has. Returns the unsubscribe.
 */
function hearOtherProcesses(options: DeletionOptions, deletedElsewhere: (id: string) => void): () => void {
  const recheck = async (id: string) => {
    if ((await options.agents.byId(id)) === undefined) deletedElsewhere(id);
  };
  const offs = [
    options.wake?.subscribe('agent', deletedElsewhere),
    options.wake?.onResync(() => {
      options.forgetAll?.();
      // A failed read leaves the batch running: its next call asks the store all the same.
      for (const id of options.batches.agents()) recheck(id).catch(() => undefined);
    }),
  ];
  return () => {
    for (const off of offs) off?.();
  };
}
