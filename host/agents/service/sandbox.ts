// Sandbox binding: an agent's sandbox, created lazily when its first tool or file transfer needs
// one (or re-adopted by agent id after a restart), at most once per process, its id written to the
// agent's record. Race-free against delete(): the pending creation is registered synchronously
// and checks whether the agent is gone inside it (a store read), so a delete either refuses the call
// (marked here) or finds the pending creation and waits for it before destroying; a creation that
// finishes after the agent was deleted elsewhere destroys what it made. A child or teammate works in its parent's workspace: its
// sandbox is the one of the nearest agent above it that owns one (a top-level agent, or a child
// with an isolated workspace), never one of its own, so deleting it leaves the workspace to its
// owner. A child with an isolated workspace (its parent's `childWorkspace: "isolated"`) owns a
// sandbox, which starts as a copy of its parent's workspace (when the parent has a sandbox): a fork
// of a snapshot of it where the provider has snapshots (fork.ts), else a tar copy of its files.
// Pauses (pause.ts) run under hold(): while one pauses or resumes an agent, uses of its sandbox
// wait, and a binding made afterwards first asks `beforeBind` (a paused agent resumed or refused).
import type { Sandbox, SandboxProvider, SandboxSpec } from '../../sandbox/types.ts';
import type { AgentStore } from '../../store/index.ts';
import type { SnapshotStore } from '../../store/snapshots.ts';
import { sandboxLimits } from '../sandbox-limits.ts';
import type { Agent } from '../types.ts';
import { forkedSandbox } from './fork.ts';
import { type DeletionMarks, deletedError, toAgent } from './records.ts';

/**
 * An agent's sandbox as this process knows it (a child sharing a workspace: its owner's).
 * `none`: none was ever made; `starting`: being created or re-adopted now; `ready`: a handle is
 * held here; `gone`: the agent's record names one but this process holds none (after a restart,
 * or it failed to come back): the next use re-adopts it or makes a new one.
 */
export type SandboxState = 'none' | 'starting' | 'ready' | 'gone';

export interface SandboxBinding {
  /** The agent's sandbox, created on first use; NOT_FOUND once the agent is gone. */
  of(agent: Agent): Promise<Sandbox>;
  /** Forgets the agent's sandbox; resolves when a creation in progress has settled (for delete()). */
  release(id: string): Promise<void>;
  /** Sandboxes this process holds a handle to (or is getting one for). */
  size(): number;
  /**
   * The agent's sandbox state here, from memory and the agent's record (`recorded`: whether the
   * record names a sandbox, when the caller has it at hand; read from the store otherwise).
   */
  stateOf(agent: Agent, recorded?: boolean): Promise<SandboxState>;
  /** The agent whose sandbox (and workspace) `agent` uses: itself or an ancestor; undefined when gone. */
  ownerOf(agent: Agent): Promise<Agent | undefined>;
  /**
   * Runs `fn` (a pause or a resume of the agent) while uses of its sandbox wait; one at a time per
   * agent. `fn` starts in the same turn as the hold, once an earlier hold has ended.
   */
  hold<T>(id: string, fn: () => Promise<T>): Promise<T>;
  /** Settles when the agent's hold in progress, if any, has ended. */
  held(id: string): Promise<void>;
}

/** A child that works in an ancestor's workspace (not an isolated one). */
export const ownsNone = (agent: Agent): boolean =>
  agent.links !== undefined && agent.config.isolatedWorkspace !== true;

export interface SandboxBindingOptions {
  provider: SandboxProvider;
  agents: AgentStore;
  marks: DeletionMarks;
  /** Asked before a sandbox is bound (found or made) in this process: throws to refuse it. */
  beforeBind?: (agent: Agent) => Promise<void>;
  /** The snapshots' records: an agent made from one is placed on the node its record names. */
  snapshots?: Pick<SnapshotStore, 'get'>;
}

export function createSandboxBinding(options: SandboxBindingOptions): SandboxBinding {
  const { provider, agents, marks } = options;
  const sandboxes = new Map<string, Promise<Sandbox>>();
  /** Agents whose entry in `sandboxes` has resolved. */
  const ready = new Set<string>();
  /** Pauses and resumes in progress, by agent (they never reject). */
  const holds = new Map<string, Promise<void>>();

  /** The agent whose sandbox `agent` uses: itself, or the nearest agent above it that owns one. */
  async function ownerOf(agent: Agent): Promise<Agent | undefined> {
    let current: Agent = agent;
    for (let hops = 0; ownsNone(current) && hops < 64; hops++) {
      const links = current.links as NonNullable<Agent['links']>;
      const parent = await agents.get(current.tenantId, links.parentId);
      if (parent === undefined || marks.deleting.has(parent.id)) return undefined;
      current = toAgent(parent);
    }
    return current;
  }

  function of(agent: Agent): Promise<Sandbox> {
    if (marks.deleting.has(agent.id)) return Promise.reject(deletedError(agent.id));
    if (ownsNone(agent)) return ownersSandbox(agent);
    const held = holds.get(agent.id);
    if (held !== undefined) return held.then(() => of(agent));
    let pending = sandboxes.get(agent.id);
    if (pending === undefined) {
      const binding = bind(agent);
      sandboxes.set(agent.id, binding);
      binding.then(
        () => {
          if (sandboxes.get(agent.id) === binding) ready.add(agent.id);
        },
        () => {
          if (sandboxes.get(agent.id) === binding) sandboxes.delete(agent.id);
        },
      );
      pending = binding;
    }
    return pending;
  }

  async function ownersSandbox(agent: Agent): Promise<Sandbox> {
    if (await marks.gone(agent)) throw deletedError(agent.id);
    const owner = await ownerOf(agent);
    if (owner === undefined) throw deletedError(agent.id);
    return of(owner);
  }

  async function bind(agent: Agent): Promise<Sandbox> {
    // Inside the registered binding, so a delete that starts meanwhile finds it and waits for it.
    if (await marks.gone(agent)) throw deletedError(agent.id);
    await options.beforeBind?.(agent);
    const existing = await provider.get(agent.id);
    if (existing === undefined && (await marks.gone(agent))) throw deletedError(agent.id);
    const sandbox =
      existing ??
      (await newSandbox(
        { provider, agents, of, snapshots: options.snapshots },
        agent,
        await ownerAbove(agent),
      ));
    if (await marks.gone(agent)) {
      if (!marks.deleting.has(agent.id)) await provider.destroy(agent.id).catch(() => undefined);
      throw deletedError(agent.id);
    }
    await agents.setSandboxId(agent.id, sandbox.id);
    return sandbox;
  }

  /** The agent whose sandbox an isolated child's workspace comes from (placement puts it beside). */
  async function ownerAbove(agent: Agent): Promise<Agent | undefined> {
    const parent = agent.links && (await agents.get(agent.tenantId, agent.links.parentId));
    return parent ? await ownerOf(toAgent(parent)) : undefined;
  }

  async function release(id: string): Promise<void> {
    const creating = sandboxes.get(id);
    sandboxes.delete(id);
    ready.delete(id);
    await creating?.catch(() => undefined);
  }

  async function stateOf(agent: Agent, recorded?: boolean): Promise<SandboxState> {
    const shared = ownsNone(agent);
    const owner = shared ? await ownerOf(agent) : agent;
    if (owner === undefined) return 'none';
    if (ready.has(owner.id)) return 'ready';
    if (sandboxes.has(owner.id)) return 'starting';
    const named =
      !shared && recorded !== undefined
        ? recorded
        : (await agents.get(owner.tenantId, owner.id))?.sandboxId !== undefined;
    return named ? 'gone' : 'none';
  }

  return {
    of,
    release,
    size: () => sandboxes.size,
    stateOf,
    ownerOf,
    hold: (id, fn) => holdOn(holds, id, fn),
    held: async (id) => holds.get(id),
  };
}

/**
 * A new sandbox for the agent: from its snapshot (`fromSnapshot`), or for an isolated child (`above`:
 * the agent whose workspace it copies) a fork of that workspace (fork.ts) or, where that cannot be,
 * a new one seeded by a tar copy of its files (none when `above` never had a sandbox).
 */
async function newSandbox(
  deps: {
    provider: SandboxProvider;
    agents: AgentStore;
    of: (agent: Agent) => Promise<Sandbox>;
    snapshots: Pick<SnapshotStore, 'get'> | undefined;
  },
  agent: Agent,
  above: Agent | undefined,
): Promise<Sandbox> {
  const { provider, agents } = deps;
  const fresh = (await agents.get(agent.tenantId, agent.id))?.sandboxId === undefined;
  const snapshot = await firstSnapshot(agents, agent);
  const snapshotNode =
    snapshot === undefined ? undefined : (await deps.snapshots?.get(agent.tenantId, snapshot))?.node;
  const spec: SandboxSpec = {
    tenantId: agent.tenantId,
    agentId: agent.id,
    limits: sandboxLimits(agent.config.sandbox),
    ...(agent.config.sandbox?.runtime === undefined ? {} : { runtime: agent.config.sandbox.runtime }),
    ...(above === undefined ? {} : { near: above.id }),
    ...(snapshot === undefined ? {} : { fromSnapshot: snapshot }),
    ...(snapshotNode === undefined ? {} : { snapshotNode }),
    ...(fresh ? { fresh } : {}),
  };
  // A parent that never had a sandbox has nothing to copy (and gets none for it).
  const source =
    above !== undefined && (await agents.get(above.tenantId, above.id))?.sandboxId !== undefined
      ? above
      : undefined;
  const forked = source === undefined ? undefined : await forkedSandbox(provider, spec, source.id);
  if (forked !== undefined) return forked;
  const sandbox = await provider.create(spec);
  if (source !== undefined)
    await sandbox.archive.upload('.', await (await deps.of(source)).archive.download('.'));
  return sandbox;
}

/** The snapshot a top-level agent's first sandbox is a copy of (never one it had already). */
async function firstSnapshot(agents: AgentStore, agent: Agent): Promise<string | undefined> {
  const id = agent.config.fromSnapshot;
  if (id === undefined || agent.links !== undefined) return undefined;
  return (await agents.get(agent.tenantId, agent.id))?.sandboxId === undefined ? id : undefined;
}

/** SandboxBinding.hold over the binding's holds: one at a time per agent, `fn` started in the turn its hold is set. */
async function holdOn<T>(holds: Map<string, Promise<void>>, id: string, fn: () => Promise<T>): Promise<T> {
  for (let held = holds.get(id); held !== undefined; held = holds.get(id)) await held;
  const run = fn();
  const slot = run.then(
    () => undefined,
    () => undefined,
  );
  holds.set(id, slot);
  try {
    return await run;
  } finally {
    if (holds.get(id) === slot) holds.delete(id);
  }
}
