// A tenant's deletion (DELETE /v1/tenants/:id, `node host/cli.ts tenants delete`), run in the
// background and resumable. Order: the tenant is marked `deleting` and every key of it revoked in
// one write (TenantStore.beginDeletion: refused from the next request, in every process hearing
// the wake-up bus); then each live agent goes through the agent service's own deletion (its
// batches stopped, requests cancelled, plugins removed, container and workspace destroyed; a
// top-level agent takes its children and teammates with it); then its workspace snapshots with their
// files (the agent service's); then what is left in the store goes
// in bounded slices (TenantPurgeStore: logs, payloads, plugins, skills, schedules, egress settings
// and their sealed credentials, team boards, mail, sessions, the agent rows, the keys); last the
// tenant is marked `deleted` (its row stays, so the operator can read what happened).
// Invariants: the durable state is the tenant's `deleting` row, so a service that stopped or
// crashed in the middle picks it up at start (resume()) and carries on from what is left (every
// step is idempotent: an agent already deleted is skipped, a slice removes what is still there);
// an agent row goes only once its sandbox is removed (a failed removal is retried by the agent
// service's reaper, and this deletion waits for it, retrying every `retryMs`); one run per tenant
// at a time in this process. With replicas, two processes may both run one tenant's deletion:
// each step tolerates the other's (agent deletions are stamped once by the store, slices delete
// only what is still there).
import { type ErrorCode, isSandboxError } from '../errors.ts';
import type { AgentStore, TenantInfo, TenantStore } from '../store/index.ts';
import type { TenantPurgeStore } from '../store/tenant-purge.ts';

export interface TenantDeletionOptions {
  tenants: Pick<TenantStore, 'beginDeletion' | 'finishDeletion' | 'listDeleting' | 'getTenant'>;
  purge: TenantPurgeStore;
  /** The event log: what its agents appended is written before their log is removed. */
  events: { flush(): Promise<void> };
  /** The store's agents (which of the tenant's are live). */
  agents: Pick<AgentStore, 'list'>;
  /** The agent service: its deletion path and its reaper of sandboxes a failed removal left. */
  service: {
    delete(tenantId: string, id: string): Promise<void>;
    reapDeleted(onError?: (agentId: string, error: unknown) => void): Promise<number>;
    /** Its workspace snapshots, deleted with their files after its agents (absent: none kept). */
    snapshots?: {
      list(tenantId: string): Promise<{ id: string }[]>;
      delete(tenantId: string, id: string): Promise<void>;
    };
  };
  /** Rows removed per slice (one transaction each). Default 500. */
  sliceRows?: number;
  /** How much later a deletion that failed (the store, the engine) is tried again. Default 5000 ms. */
  retryMs?: number;
  /** Where failures go (the deletion is retried). Default: nowhere. */
  onError?: (tenantId: string, error: unknown) => void;
  /** Told after each agent was deleted; a deletion is stopped midway here by the crash tests. */
  afterAgent?: (tenantId: string, agentId: string) => void | Promise<void>;
}

/** A tenant as the admin reads it, with what is left while it is being deleted. */
export type TenantStatus = TenantInfo & { remaining?: Record<string, number> };

export interface TenantDeletion {
  /** Marks the tenant deleting (refused at once) and removes its things in the background. Undefined: no such tenant. */
  delete(tenantId: string): Promise<TenantInfo | undefined>;
  /**
   * Runs the tenant's deletion once more after the current run (if any): a request authenticated
   * before the deletion began may write after that run passed what it wrote (late-writes.ts).
   */
  again(tenantId: string): Promise<void>;
  /** Carries on every deletion a previous run left unfinished (at start). How many it picked up. */
  resume(): Promise<number>;
  /**
   * resume() now and every `pollMs` after (a deletion asked through the CLI, or by a replica that
   * stopped, is picked up); close() stops it. Resolves with the first resume()'s count.
   */
  watch(pollMs: number): Promise<number>;
  /** The tenant, with `remaining` (rows by kind) while it is deleting. */
  status(tenantId: string): Promise<TenantStatus | undefined>;
  /** Resolves when this process's run of the tenant's deletion ended (done, or stopped by close). */
  settled(tenantId: string): Promise<void>;
  /** Stops after the current step; what is left stays `deleting` for the next start. */
  close(): Promise<void>;
}

/** An agent that is already gone (deleted here, elsewhere, or with its parent). */
const GONE: readonly ErrorCode[] = ['NOT_FOUND'];

const stillRunning = (count: number): Error =>
  new Error(`${count} deleted agent(s) of the tenant still hold a sandbox; the reaper retries`);

/** The tenant's snapshots and their files (a service that keeps none has none to delete). */
async function deleteSnapshots(
  service: TenantDeletionOptions['service'],
  tenantId: string,
  closed: () => boolean,
): Promise<void> {
  const { snapshots } = service;
  if (snapshots === undefined) return;
  const listed = await snapshots.list(tenantId).catch((error: unknown) => {
    if (isSandboxError(error) && error.code === 'SNAPSHOT_UNSUPPORTED') return [];
    throw error;
  });
  for (const { id } of listed) {
    if (closed()) return;
    await snapshots.delete(tenantId, id).catch((error: unknown) => {
      if (!isSandboxError(error) || !GONE.includes(error.code)) throw error;
    });
  }
}

export function createTenantDeletion(options: TenantDeletionOptions): TenantDeletion {
  const { tenants, purge, agents, service } = options;
  const sliceRows = options.sliceRows ?? 500;
  const retryMs = options.retryMs ?? 5000;
  const running = new Map<string, Promise<void>>();
  const retries = new Set<NodeJS.Timeout>();
  let poll: NodeJS.Timeout | undefined;
  let closed = false;

  async function deleteAgents(tenantId: string): Promise<void> {
    /** Agents this pass asked to delete that may still be listed (a delete of them under way elsewhere). */
    const tried = new Set<string>();
    for (;;) {
      if (closed) return;
      const live = await agents.list(tenantId);
      if (live.length === 0) return;
      const fresh = live.filter((a) => !tried.has(a.id));
      if (fresh.length === 0) {
        // Each is being deleted by someone else (a request, another replica): give them a moment.
        await new Promise((resolve) => setTimeout(resolve, 100));
        tried.clear();
        continue;
      }
      // A top-level agent first: its children and teammates go with it.
      const next = fresh.find((a) => a.links === undefined) ?? (fresh[0] as (typeof fresh)[number]);
      tried.add(next.id);
      try {
        await service.delete(tenantId, next.id);
      } catch (error) {
        if (!isSandboxError(error) || !GONE.includes(error.code)) throw error;
      }
      await options.afterAgent?.(tenantId, next.id);
    }
  }

  async function runOnce(tenantId: string): Promise<void> {
    await deleteAgents(tenantId);
    if (closed) return;
    await deleteSnapshots(service, tenantId, () => closed);
    if (closed) return;
    await options.events.flush(); // no row of theirs is written after the slices below
    while (!closed && (await purge.purgeSlice(tenantId, sliceRows)) > 0) {
      // A slice is one transaction; let requests in between them.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    if (closed) return;
    const left = await purge.remaining(tenantId);
    if (Object.keys(left).length > 0) {
      await service.reapDeleted();
      throw stillRunning(left.agents ?? 0);
    }
    await tenants.finishDeletion(tenantId);
  }

  function start(tenantId: string): Promise<void> {
    const current = running.get(tenantId);
    if (current !== undefined) return current;
    const run = runOnce(tenantId)
      .catch((error: unknown) => {
        options.onError?.(tenantId, error);
        if (closed) return;
        const timer = setTimeout(() => {
          retries.delete(timer);
          if (!closed) start(tenantId);
        }, retryMs);
        timer.unref();
        retries.add(timer);
      })
      .finally(() => running.delete(tenantId));
    running.set(tenantId, run);
    return run;
  }

  async function resume(): Promise<number> {
    const ids = await tenants.listDeleting();
    for (const id of ids) start(id);
    return ids.length;
  }

  return {
    async delete(tenantId) {
      const tenant = await tenants.beginDeletion(tenantId);
      if (tenant?.state === 'deleting') start(tenantId);
      return tenant;
    },
    again: (tenantId) =>
      (running.get(tenantId) ?? Promise.resolve()).then(() => (closed ? undefined : start(tenantId))),
    resume,
    async watch(pollMs) {
      if (poll === undefined && !closed) {
        poll = setInterval(() => {
          resume().catch((error: unknown) => options.onError?.('*', error));
        }, pollMs);
        poll.unref();
      }
      return resume();
    },
    async status(tenantId) {
      const tenant = await tenants.getTenant(tenantId);
      if (tenant?.state !== 'deleting') return tenant;
      return { ...tenant, remaining: await purge.remaining(tenantId) };
    },
    settled: async (tenantId) => {
      await running.get(tenantId);
    },
    async close() {
      closed = true;
      clearInterval(poll);
      for (const timer of retries) clearTimeout(timer);
      retries.clear();
      await Promise.all(running.values());
    },
  };
}
