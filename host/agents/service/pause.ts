// Pausing and resuming agents (POST /v1/agents/:id/pause and /resume, and idle pauses): the
// agent's sandbox stopped (no CPU, no memory held; its processes, /tmp, terminals and background
// jobs end) or frozen (`freeze`: the engine's freezer, processes and memory kept, no CPU), its
// workspace kept, and the pause kept in its record (agents.paused), so it outlives a restart.
// A paused agent is resumed by POST …/resume, or by its next call when its tenant's settings say
// so (onCall: `resume`, the default: the call pays the start); else the call answers AGENT_PAUSED.
// Invariants: a pause or resume runs under the sandbox binding's hold (sandbox.ts), so a use that
// starts meanwhile waits for it and then finds the agent paused (resumed or refused as the
// tenant says); a pause never runs while a batch of the agent or a sandbox call is in flight
// (AGENT_BUSY); pausing a paused agent, or resuming a running one, changes nothing; only an agent
// that owns its workspace pauses (a child sharing its parent's answers AGENT_SHARES_WORKSPACE).
// What this process knows of each agent's pause is remembered (`known`), read from the store
// the first time; with replicas only the family's owner pauses and resumes it, and a family
// released to another replica is forgotten here (forget()). A freeze lasts at most the operator's
// bound (`freeze.maxMs`, ./freeze-bound.ts): then the agent is stopped, its pause a `stop` one.
import { SandboxError } from '../../errors.ts';
import type { PauseMode, SandboxProvider } from '../../sandbox/types.ts';
import type { AgentPause, AgentRecord, AgentStore } from '../../store/index.ts';
import type { TenantSettingsReader } from '../tenant-settings.ts';
import type { Agent } from '../types.ts';
import type { Batches } from './batches.ts';
import { type FreezeBoundOptions, startFreezeBound } from './freeze-bound.ts';
import { deletedError, toAgent } from './records.ts';
import { ownsNone, type SandboxBinding } from './sandbox.ts';

/** What a pause keeps, loses and holds, by mode: the API's answer says it. */
export const PAUSE_EFFECTS = {
  stop: {
    kept: ['workspace files'],
    lost: ['processes', 'background jobs', 'terminals', '/tmp'],
    holds: [] as string[],
  },
  freeze: {
    kept: ['workspace files', 'processes', 'background jobs', 'terminals', '/tmp'],
    lost: ['network connections its processes hold may time out while frozen'],
    holds: ['memory'],
  },
} as const;

/** An agent's pause as the API answers it. */
export interface PauseView {
  agentId: string;
  paused: boolean;
  /** Present while paused. */
  pause?: AgentPause;
  /** While paused: what it keeps, what it lost and what it still holds. */
  kept?: readonly string[];
  lost?: readonly string[];
  holds?: readonly string[];
}

export interface Pauses {
  pause(agent: Agent, mode: PauseMode, by?: AgentPause['by']): Promise<PauseView>;
  resume(agent: Agent): Promise<PauseView>;
  /**
   * Before a call batch: when the agent (or the owner of its workspace) is paused, resumes it
   * (it starts on first use) or refuses with AGENT_PAUSED, as its tenant's settings say.
   */
  admit(agent: Agent): Promise<void>;
  /** The pause of the agent that owns `owner`'s workspace; undefined while it runs. */
  pausedOf(owner: Agent): Promise<AgentPause | undefined>;
  /** What is known of an agent's pause (from its record, in a list), remembered here. */
  learn(agentId: string, pause: AgentPause | undefined): void;
  /** Forgets what this process knows of the agents' pauses (deleted, or their family moved to another replica). */
  forget(agentIds: readonly string[]): void;
  /** The provider's idle sweep, told how long each tenant's agents may stay idle and how to pause one. */
  pauseWhenIdle(): void;
  /** Stops the sweep of the freeze bound. */
  close(): void;
}

export interface PausesOptions {
  agents: AgentStore;
  provider: SandboxProvider;
  sandboxes: SandboxBinding;
  batches: Batches;
  settings: TenantSettingsReader;
  now?: () => number;
  /** The operator's bound on a freeze (ms; 0 or absent: none) and, with replicas, which agents this one may stop. */
  freeze?: Pick<FreezeBoundOptions, 'maxMs' | 'mayStop' | 'onError'>;
}

/** The most agents whose pause is remembered at once (the oldest is forgotten first, then read again). */
const KNOWN_MAX = 16_384;

export const viewOf = (agentId: string, pause: AgentPause | undefined): PauseView =>
  pause === undefined
    ? { agentId, paused: false }
    : { agentId, paused: true, pause, ...PAUSE_EFFECTS[pause.mode] };

function refuseShared(agent: Agent): void {
  if (ownsNone(agent))
    throw new SandboxError(
      'AGENT_SHARES_WORKSPACE',
      `Agent ${agent.id} works in its parent's workspace and has no sandbox of its own; pause or resume ${agent.links?.parentId} instead.`,
      { data: { agentId: agent.id, parentId: agent.links?.parentId } },
    );
}

const pausedError = (agent: Agent, pause: AgentPause): SandboxError =>
  new SandboxError(
    'AGENT_PAUSED',
    `Agent ${agent.id} is paused (since ${new Date(pause.at).toISOString()}); POST /v1/agents/${agent.id}/resume first (its tenant's settings do not let calls resume it).`,
    { data: { agentId: agent.id, pause } },
  );

/** An agent frozen since `at` past the bound: stopped, its pause a stop since then (unless it changed meanwhile). */
async function stopFrozen(
  { agents, provider, sandboxes }: PausesOptions,
  setPaused: (agent: Agent, pause: AgentPause) => Promise<void>,
  record: AgentRecord,
  at: number,
): Promise<void> {
  const agent = toAgent(record);
  await sandboxes.hold(agent.id, async () => {
    const now = await agents.get(agent.tenantId, agent.id);
    if (now?.paused?.mode !== 'freeze' || now.paused.at !== at) return;
    // The engine thaws a frozen container to stop it; a sandbox already gone stops nothing.
    await provider.pause?.(agent.id, 'stop');
    await setPaused(agent, { ...now.paused, mode: 'stop' });
  });
}

export function createPauses(options: PausesOptions): Pauses {
  const { agents, provider, sandboxes, batches, settings } = options;
  const now = options.now ?? Date.now;
  /** Agent id → its pause (null: running), as this process last knew it. */
  const known = new Map<string, AgentPause | null>();
  function remember(id: string, pause: AgentPause | undefined): void {
    known.delete(id);
    if (known.size >= KNOWN_MAX) known.delete(known.keys().next().value as string);
    known.set(id, pause ?? null);
  }

  async function pausedOf(owner: Agent): Promise<AgentPause | undefined> {
    const hit = known.get(owner.id);
    if (hit !== undefined) return hit ?? undefined;
    const record = await agents.get(owner.tenantId, owner.id);
    if (record === undefined) throw deletedError(owner.id);
    remember(owner.id, record.paused);
    return record.paused;
  }

  async function setPaused(agent: Agent, pause: AgentPause | undefined): Promise<void> {
    if (!(await agents.setPaused(agent.tenantId, agent.id, pause))) throw deletedError(agent.id);
    remember(agent.id, pause);
  }

  /** A use of a paused owner's sandbox: resumed (the record cleared; it starts on use) or refused. */
  async function onUse(owner: Agent): Promise<void> {
    await sandboxes.held(owner.id);
    const pause = await pausedOf(owner);
    if (pause === undefined) return;
    if ((await settings.get(owner.tenantId)).pause.onCall === 'refuse') throw pausedError(owner, pause);
    await sandboxes.hold(owner.id, async () => {
      if ((await pausedOf(owner)) !== undefined) await setPaused(owner, undefined);
    });
  }

  async function pause(agent: Agent, mode: PauseMode, by: AgentPause['by'] = 'api'): Promise<PauseView> {
    refuseShared(agent);
    if (provider.pause === undefined)
      throw new SandboxError('CONFIG_INVALID', `The ${provider.name} sandbox provider cannot pause.`);
    const stop = provider.pause.bind(provider);
    return sandboxes.hold(agent.id, async () => {
      const before = await pausedOf(agent);
      if (before !== undefined) return viewOf(agent.id, before);
      if (batches.activity(agent.id).batches > 0)
        throw new SandboxError(
          'AGENT_BUSY',
          `Agent ${agent.id} has a call batch running; pause it once that is done.`,
          { data: { agentId: agent.id } },
        );
      const done = await stop(agent.id, mode);
      const paused: AgentPause = { mode: done === 'none' ? mode : done, at: now(), by };
      await setPaused(agent, paused);
      // The next use binds afresh, and so meets the pause (sandbox.ts beforeBind). Not awaited: a
      // binding in progress waits for this hold in beforeBind, and then meets the pause too.
      void sandboxes.release(agent.id);
      return viewOf(agent.id, paused);
    });
  }

  async function resume(agent: Agent): Promise<PauseView> {
    refuseShared(agent);
    return sandboxes.hold(agent.id, async () => {
      const record = await agents.get(agent.tenantId, agent.id);
      if (record === undefined) throw deletedError(agent.id);
      if (record.paused === undefined) {
        remember(agent.id, undefined);
        return viewOf(agent.id, undefined);
      }
      // Started before the record is cleared: a start that fails leaves the agent paused.
      if (record.sandboxId !== undefined) await provider.resume?.(agent.id);
      await setPaused(agent, undefined);
      return viewOf(agent.id, undefined);
    });
  }

  async function admit(agent: Agent): Promise<void> {
    const owner = ownsNone(agent) ? await sandboxes.ownerOf(agent) : agent;
    if (owner !== undefined) await onUse(owner);
  }

  // No bound (maxMs 0): nothing started.
  const stop = (record: AgentRecord, at: number) => stopFrozen(options, setPaused, record, at);
  const stopBound = startFreezeBound({ maxMs: 0, ...options.freeze, agents, now, stopFrozen: stop });

  async function pauseIdle(agentId: string): Promise<void> {
    const record = await agents.byId(agentId);
    if (record === undefined || record.paused !== undefined) return;
    const agent = toAgent(record);
    // Only an agent this process serves: with replicas, one whose family moved away is released
    // here (its binding dropped) while its container may still be used by the new owner.
    if (ownsNone(agent) || (await sandboxes.stateOf(agent, true)) !== 'ready') return;
    await pause(agent, 'stop', 'idle').catch((e: unknown) => {
      // A call that started meanwhile: still in use, not idle.
      if (!(e instanceof SandboxError && e.code === 'AGENT_BUSY')) throw e;
    });
  }

  return {
    pause,
    resume,
    admit,
    pausedOf: async (owner) => pausedOf((ownsNone(owner) ? await sandboxes.ownerOf(owner) : owner) ?? owner),
    learn: remember,
    forget: (agentIds) => {
      for (const id of agentIds) known.delete(id);
    },
    close: stopBound,
    pauseWhenIdle() {
      provider.pauseWhenIdle?.({
        afterMs(tenantId) {
          const idle = settings.peek(tenantId)?.pause.idleSeconds ?? 0;
          return idle > 0 ? idle * 1000 : undefined;
        },
        pause: pauseIdle,
      });
    },
  };
}
