// Agent state and usage as this process knows them: its sandbox's state, its batches running and
// its last call (memory only, so a list of a thousand agents costs no Docker or disk call), what
// its sandbox uses now (through the provider, one agent at a time), and the workspaces of every
// tenant's agents with their disk for the operator (paged, a bounded number of reads at once).
// Read-only: nothing here creates, starts or adopts a sandbox.
import type { SandboxProvider, SandboxUsage, SandboxUsageOptions, UsedOf } from '../../sandbox/types.ts';
import type { AgentPause, AgentStore } from '../../store/index.ts';
import type { Agent } from '../types.ts';
import type { Batches } from './batches.ts';
import type { Pauses } from './pause.ts';
import { toAgent } from './records.ts';
import { ownsNone, type SandboxBinding, type SandboxState } from './sandbox.ts';

export type { SandboxState };

/** An agent's state in this process. */
export interface AgentState {
  /**
   * `paused`: the agent (or the owner of its workspace) is paused (service/pause.ts), wherever it
   * runs; `unreachable`: its sandbox's node does not answer now (`node` names it).
   */
  sandbox: SandboxState | 'paused' | 'unreachable';
  /** With `unreachable`: the node that does not answer. */
  node?: string;
  /** While paused: how, since when, by whom. */
  pause?: AgentPause;
  /** Call batches of the agent running now. */
  batches: number;
  /** When its last batch started or ended in this process (epoch ms); absent when none did. */
  lastCallAt?: number;
}

/** A workspace of an agent, as the operator sees it. */
export interface WorkspaceInfo {
  tenantId: string;
  agentId: string;
  /** Absent when the provider measures no disk (no size limit, or the sandbox is gone). */
  disk?: UsedOf;
}

/** Most workspaces one page lists. */
export const MAX_WORKSPACE_PAGE = 100;
/** Workspaces measured at once while a page is read. */
const CONCURRENT_READS = 4;

export interface AgentUsage {
  state(agent: Agent, recorded?: boolean): Promise<AgentState>;
  /** The tenant's live agents with their state (one store read, plus a shared workspace's owner). */
  list(tenantId: string): Promise<{ agent: Agent; state: AgentState }[]>;
  /** What the sandbox the agent works in uses now; undefined when it has none or the provider cannot tell. */
  sandbox(agent: Agent, options?: SandboxUsageOptions): Promise<SandboxUsage | undefined>;
  /** Workspaces of agents with a sandbox, by agent id after `after`, at most `limit` (≤ MAX_WORKSPACE_PAGE). */
  workspaces(page: {
    after?: string;
    limit?: number;
  }): Promise<{ workspaces: WorkspaceInfo[]; next?: string }>;
}

export interface AgentUsageOptions {
  agents: AgentStore;
  provider: SandboxProvider;
  sandboxes: SandboxBinding;
  batches: Batches;
  pauses: Pauses;
}

/** Runs `fn` over `items`, at most `width` at once, results in order. */
async function mapBounded<T, R>(items: T[], width: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  async function worker(): Promise<void> {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T);
    }
  }
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
  return out;
}

export function createAgentUsage(options: AgentUsageOptions): AgentUsage {
  const { agents, provider, sandboxes, batches, pauses } = options;

  /** The silent node of the agent's sandbox (a shared workspace: its owner's), from memory. */
  async function unreachableOf(agent: Agent): Promise<string | undefined> {
    if (provider.unreachable === undefined) return undefined;
    const owner = ownsNone(agent) ? await sandboxes.ownerOf(agent) : agent;
    return owner === undefined ? undefined : provider.unreachable(owner.id);
  }

  async function state(agent: Agent, recorded?: boolean): Promise<AgentState> {
    const pause = await pauses.pausedOf(agent);
    const node = await unreachableOf(agent);
    const sandbox =
      pause !== undefined
        ? 'paused'
        : node !== undefined
          ? 'unreachable'
          : await sandboxes.stateOf(agent, recorded);
    const { batches: running, lastCallAt } = batches.activity(agent.id);
    return {
      sandbox,
      ...(node === undefined ? {} : { node }),
      ...(pause === undefined ? {} : { pause }),
      batches: running,
      ...(lastCallAt === undefined ? {} : { lastCallAt }),
    };
  }

  async function sandbox(agent: Agent, usageOptions?: SandboxUsageOptions) {
    const owner = await sandboxes.ownerOf(agent);
    if (owner === undefined || provider.usage === undefined) return undefined;
    return provider.usage(owner.id, usageOptions);
  }

  async function workspaces(page: { after?: string; limit?: number }) {
    const limit = Math.max(1, Math.min(MAX_WORKSPACE_PAGE, Math.trunc(page.limit ?? 50)));
    const records = await agents.withSandbox(page.after ?? '', limit + 1);
    const shown = records.slice(0, limit);
    const list = await mapBounded(shown, CONCURRENT_READS, async (record): Promise<WorkspaceInfo> => {
      const used = await provider.usage?.(record.id).catch(() => undefined);
      return {
        tenantId: record.tenantId,
        agentId: record.id,
        ...(used?.disk === undefined ? {} : { disk: used.disk }),
      };
    });
    const last = shown.at(-1);
    return { workspaces: list, ...(records.length > limit && last ? { next: last.id } : {}) };
  }

  return {
    state,
    list: async (tenantId) =>
      Promise.all(
        (await agents.list(tenantId)).map(async (record) => {
          const agent = toAgent(record);
          // The record says whether it is paused: no further read per agent for the list.
          if (!ownsNone(agent)) pauses.learn(agent.id, record.paused);
          return { agent, state: await state(agent, record.sandboxId !== undefined) };
        }),
      ),
    sandbox,
    workspaces,
  };
}
