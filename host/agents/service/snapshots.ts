// Workspace snapshots of agents (POST /v1/agents/:id/snapshots, /v1/snapshots/:id): a snapshot is
// a copy of an agent's workspace on the node that holds it (the provider's snapshot(): consistent,
// its writes held while the copy is made), with a row in the store (store.snapshots) that keeps it
// across restarts; an agent created with `fromSnapshot` starts with a copy of one (create.ts
// checks it, sandbox.ts makes the sandbox from it). Snapshots outlive their agent; one asked while
// its agent is being deleted answers NOT_FOUND, whichever step the deletion reached.
// Invariants: another tenant's snapshot, or one of another tenant's agent, reads as NOT_FOUND; a
// child working in its parent's workspace has none of its own (AGENT_SHARES_WORKSPACE); a paused
// agent is snapshotted where it is and stays paused; a tenant's snapshots are taken one at a time
// in this process, and on PostgreSQL in the tenant's turn across replicas too (quotaTurn), so two
// cannot pass its byte quota together (`maxBytes`: checked before the copy and again with its
// size, a copy past it deleted); a row is written only once its file is whole,
// and a snapshot's row goes before its file.
import { nanoid } from 'nanoid';
import { SandboxError } from '../../errors.ts';
import type { SandboxProvider } from '../../sandbox/types.ts';
import type { AgentStore, TenantStore } from '../../store/index.ts';
import type { SnapshotRecord, SnapshotStore } from '../../store/snapshots.ts';
import type { Agent } from '../types.ts';
import { type AgentLookup, deletedError } from './records.ts';
import { ownsNone, type SandboxBinding } from './sandbox.ts';

/** A snapshot as the API shows it. */
export type SnapshotView = Omit<SnapshotRecord, 'tenantId'>;

export interface TakeOptions {
  /** The tenant's quota of snapshot bytes (every snapshot's host disk); undefined: none. */
  maxBytes?: number;
}

export interface AgentSnapshots {
  take(tenantId: string, agentId: string, options?: TakeOptions): Promise<SnapshotView>;
  /** The tenant's snapshots, of one agent when given (NOT_FOUND for an agent it does not have). */
  list(tenantId: string, agentId?: string): Promise<SnapshotView[]>;
  get(tenantId: string, id: string): Promise<SnapshotView>;
  delete(tenantId: string, id: string): Promise<void>;
  /** The tenant's snapshot an agent is made from; NOT_FOUND, or SNAPSHOT_UNSUPPORTED here. */
  source(tenantId: string, id: string): Promise<SnapshotRecord>;
  /** The host disk the tenant's snapshots take. */
  usedBytes(tenantId: string): Promise<number>;
}

export interface SnapshotOptions {
  store: SnapshotStore | undefined;
  agents: Pick<AgentStore, 'get'>;
  provider: SandboxProvider;
  lookup: AgentLookup;
  sandboxes: SandboxBinding;
  /** On PostgreSQL: the tenant's turn of snapshots across replicas (TenantStore.quotaTurn). */
  quotaTurn?: TenantStore['quotaTurn'];
}

const view = ({ tenantId: _t, ...rest }: SnapshotRecord): SnapshotView => rest;

const notFound = (id: string): SandboxError =>
  new SandboxError('NOT_FOUND', `No snapshot ${id}.`, { data: { snapshotId: id } });

export function createAgentSnapshots(options: SnapshotOptions): AgentSnapshots {
  const { provider, lookup } = options;
  /** Per tenant: the end of the last snapshot taken here. */
  const turns = new Map<string, Promise<unknown>>();

  function storeOf(): SnapshotStore {
    if (options.store === undefined || provider.snapshot === undefined || provider.dropSnapshot === undefined)
      throw new SandboxError(
        'SNAPSHOT_UNSUPPORTED',
        'This service keeps no workspace snapshots (its workspaces, here or on its nodes, are Docker volumes without a size limit, or in memory).',
      );
    return options.store;
  }

  async function record(tenantId: string, id: string): Promise<SnapshotRecord> {
    const found = await storeOf().get(tenantId, id);
    if (found === undefined) throw notFound(id);
    return found;
  }

  async function takeNow(agent: Agent, maxBytes: number | undefined): Promise<SnapshotView> {
    const store = storeOf();
    const used = await store.totalBytes(agent.tenantId);
    if (maxBytes !== undefined && used >= maxBytes) throw overQuota(used, maxBytes, 0);
    // Never used yet: its (empty) workspace is made first, so the snapshot has one to copy.
    if ((await options.agents.get(agent.tenantId, agent.id))?.sandboxId === undefined)
      await options.sandboxes.of(agent);
    const id = `snap_${nanoid(16)}`;
    const taken = await (provider.snapshot as NonNullable<SandboxProvider['snapshot']>)(agent.id, id);
    const drop = () =>
      (provider.dropSnapshot as NonNullable<SandboxProvider['dropSnapshot']>)(id, taken.node);
    if (maxBytes !== undefined && used + taken.bytes > maxBytes) {
      await drop();
      throw overQuota(used, maxBytes, taken.bytes);
    }
    const row: SnapshotRecord = {
      id,
      tenantId: agent.tenantId,
      agentId: agent.id,
      createdAt: Date.now(),
      ...taken,
    };
    try {
      await store.add(row);
    } catch (e) {
      await drop().catch(() => undefined);
      throw e;
    }
    return view(row);
  }

  return {
    async take(tenantId, agentId, takeOptions = {}) {
      const agent = await lookup.get(tenantId, agentId);
      storeOf();
      if (ownsNone(agent))
        throw new SandboxError(
          'AGENT_SHARES_WORKSPACE',
          `Agent ${agentId} works in its parent's workspace; snapshot the parent.`,
          { data: { agentId, parentId: agent.links?.parentId } },
        );
      const now = () =>
        takeNow(agent, takeOptions.maxBytes).catch(async (e: unknown) => {
          // Deleted meanwhile (its sandbox destroyed under the copy): that is the answer, not the
          // sandbox's SANDBOX_UNAVAILABLE. The store says so once the delete began (deletion.ts).
          const still = await options.agents.get(tenantId, agentId).catch(() => null);
          if (still === undefined) throw deletedError(agentId);
          throw e;
        });
      const mine = (turns.get(tenantId) ?? Promise.resolve()).then(() =>
        // Without a quota nothing is counted: no turn across replicas to wait for.
        takeOptions.maxBytes === undefined || options.quotaTurn === undefined
          ? now()
          : options.quotaTurn('snapshots', tenantId, now),
      );
      const settled = mine.catch(() => undefined);
      turns.set(tenantId, settled);
      void settled.then(() => {
        if (turns.get(tenantId) === settled) turns.delete(tenantId);
      });
      return mine;
    },
    async list(tenantId, agentId) {
      if (agentId !== undefined) await lookup.get(tenantId, agentId);
      return (await storeOf().list(tenantId, agentId)).map(view);
    },
    get: async (tenantId, id) => view(await record(tenantId, id)),
    async delete(tenantId, id) {
      const found = await record(tenantId, id);
      if (!(await storeOf().remove(tenantId, id))) throw notFound(id);
      await (provider.dropSnapshot as NonNullable<SandboxProvider['dropSnapshot']>)(id, found.node);
    },
    source: record,
    usedBytes: async (tenantId) => storeOf().totalBytes(tenantId),
  };
}

function overQuota(used: number, max: number, bytes: number): SandboxError {
  return new SandboxError(
    'LIMIT_EXCEEDED',
    `This tenant's snapshots take ${used} bytes of its ${max}-byte quota${bytes > 0 ? ` and this one would take ${bytes} more` : ''}; delete a snapshot first, or ask the operator for more.`,
    { data: { limit: 'snapshotBytes', max, usedBytes: used, ...(bytes > 0 ? { bytes } : {}) } },
  );
}
