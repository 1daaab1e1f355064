// What one control-plane instance owns on a Docker engine that several instances may share, and
// how its containers are named. Pure: the provider lists containers and acts on the verdicts.
//
// Ownership: every container and workspace volume an instance creates carries `dsh.instance=<id>`
// (its store's instance id), and its names start with `<prefix>-<id>-`, so names never clash
// between instances and a name alone (get(agentId) after a restart) finds this instance's container.
// An instance adopts, reaps and removes only what carries its id. Another instance's containers,
// whatever their names, are never touched.
//
// Replicas (several processes on one PostgreSQL store) share its instance id, so any of them can
// reattach to any agent's container. Each labels its pool containers with its own pool owner (its
// lease holder); an unassigned pool container is a leftover only when its owner is not a replica
// that still runs (`live`), so a starting replica leaves the warm pools of the others alone.
//
// Containers made before instance ids existed (no `dsh.instance` label, names `<prefix>-agent-…` /
// `<prefix>-pool-…`) belong to whichever instance's store recorded them, so:
// - a legacy agent container is adopted only when its container id is an agent's sandbox id in this
//   instance's store (`claim`); anything else is left alone (another instance may still run it);
// - a legacy unassigned pool container is removed only when its workspace provably lives in this
//   instance's workspace store (a loop image under its root); with plain volumes that cannot be
//   proven, so those are left for the operator (`docker rm -f`, they are unassigned and empty).
//
// A store restored to an older point (a backup, docs/operations.md) does not know the agents made
// after it: their containers carry the instance's id and names, yet no agent of its leads to them.
// Given the agents the store knows (`known`, read at `knownAt`), an agent container of this
// instance whose name is none of theirs and that was created a minute or more before that read
// is reclaimed (removed with its workspace): agents are written to the store before their
// container is made (agents/service/create.ts), so a container older than the read whose agent
// the read did not see has no agent; a younger one may be a replica's new agent and is kept (it
// is judged again at the next start).

import type Docker from 'dockerode';
import { SandboxError } from '../../errors.ts';
import { INSTANCE_ID, INSTANCE_ID_TEXT } from '../nodes/remote/roles.ts';
import type { AdoptQuestions } from '../nodes/types.ts';
import { WORKSPACE_ROOT } from '../paths.ts';
import { LABEL_INSTANCE, LABEL_POOL, LABEL_POOL_OWNER } from './config.ts';
import { agentSlug } from './containers.ts';
import type { WorkspaceMount } from './workspaces.ts';

export interface Naming {
  /** `<prefix>-<instance>`: the start of every name this instance gives. */
  own: string;
  agent(agentId: string): string;
  /** The name an older version gave the agent's container. */
  legacyAgent(agentId: string): string;
  /** A fresh unique pool container name. */
  pool(random: string): string;
}

export const naming = (prefix: string, instance: string): Naming => {
  if (!INSTANCE_ID.test(instance)) {
    throw new SandboxError(
      'CONFIG_INVALID',
      `The docker provider's instance id must be ${INSTANCE_ID_TEXT} (the store's instanceId), got ${JSON.stringify(instance)}.`,
    );
  }
  const own = `${prefix}-${instance}`;
  return {
    own,
    agent: (agentId) => `${own}-agent-${agentSlug(agentId)}`,
    legacyAgent: (agentId) => `${prefix}-agent-${agentSlug(agentId)}`,
    pool: (random) => `${own}-pool-${random.replace(/[^a-zA-Z0-9]/g, 'x')}`,
  };
};

export interface Owner {
  prefix: string;
  instance: string;
  /** This process's pool nonce (`dsh.pool.owner`): its own pool containers are live, not leftovers. */
  process: string;
  /**
   * Other pool owners known to still run: replicas on this store's database (sharing its instance
   * id) whose warm pools are live. Default none: one process per instance, so every other owner's
   * unassigned pool containers are leftovers.
   */
  live?: ReadonlySet<string>;
  /** Container ids this instance's store records as agents' sandboxes (for legacy containers). */
  claim: ReadonlySet<string>;
  /** Container id → agent id: the sandboxes this instance's store records for its agents. */
  assigned: ReadonlyMap<string, string>;
  /** Whether a workspace provably lives in this instance's workspace store. */
  owns(mount: WorkspaceMount): boolean;
  /** The container names (`Naming.agent`) of every agent the store knows, deleted ones included. */
  known?: ReadonlySet<string>;
  /** When `known` was read (epoch ms): only containers created before it are judged by it. */
  knownAt?: number;
  /**
   * Instead of `known` (the node protocol): the container names of agents the store does not know,
   * among those asked about (questionsOf); only these are reclaimed, when created before `knownAt`.
   */
  unknown?: ReadonlySet<string>;
}

/** What adopt() does with one listed container. */
export type Verdict =
  /** An agent container of this instance: get(agentId) finds it (legacy ones through `name`). */
  | { kind: 'adopt'; name: string; legacy: boolean }
  /** An unassigned pool container a previous process of this instance left behind. */
  | { kind: 'remove' }
  /** An agent container of this instance whose agent the store does not know (see the header). */
  | { kind: 'reclaim'; name: string }
  /** A pool container of this instance the store records as the agent's: assigned, not yet renamed. */
  | { kind: 'assign'; agentId: string }
  /** Not this instance's to touch (another instance's), or a live pool (this process's, a live replica's). */
  | { kind: 'keep' };

/** The /workspace mount of a listed container, named as `workspaceOf` names an inspected one. */
export const listedWorkspace = (c: Docker.ContainerInfo): WorkspaceMount | undefined => {
  const m = (c.Mounts ?? []).find((x) => x.Destination === WORKSPACE_ROOT);
  if (!m) return undefined;
  return m.Type === 'volume' ? { type: 'volume', source: m.Name ?? '' } : { type: m.Type, source: m.Source };
};

/**
 * Whether a pool container's owner still runs: this process, or a live replica. A live replica
 * renames a container it assigned itself, so even an assigned one is its to finish.
 */
const poolOwnerLives = (owner: string | undefined, o: Owner): boolean =>
  owner !== undefined && (owner === o.process || o.live?.has(owner) === true);

/**
 * How much older than the store's read a container must be to be judged by it: Created is in whole
 * seconds, and on a remote node by another machine's clock. A leftover of a restore is far older.
 */
const SKEW_MS = 60_000;

/** Whether an agent container is old enough to be judged by a read of the store's agents at `knownAt`. */
const judged = (c: Docker.ContainerInfo, knownAt: number | undefined): boolean =>
  knownAt !== undefined && typeof c.Created === 'number' && c.Created * 1000 < knownAt - SKEW_MS;

/** Whether an agent container was made before the store's read of its agents, none of them its. */
const unknownAgent = (c: Docker.ContainerInfo, name: string, o: Owner): boolean => {
  if (!judged(c, o.knownAt)) return false;
  if (o.unknown !== undefined) return o.unknown.has(name);
  return o.known !== undefined && !o.known.has(name);
};

/**
 * What classify() would need the store's word on (the node protocol asks it of the control plane
 * before adopting, so the control plane answers about this engine's containers only): the
 * containers `claim` and `assigned` decide (legacy agent containers, this instance's pool
 * containers another process made), and the slugs of this instance's agent containers that
 * `known` would judge (created before `knownAt`, less the clock skew).
 */
export const questionsOf = (
  list: readonly Docker.ContainerInfo[],
  o: Pick<Owner, 'prefix' | 'instance' | 'process'>,
  knownAt: number | undefined,
): AdoptQuestions => {
  const own = `${o.prefix}-${o.instance}`;
  const sandboxes: string[] = [];
  const agents: string[] = [];
  for (const c of list) {
    const labels = c.Labels ?? {};
    const names = c.Names.map((n) => n.replace(/^\//, ''));
    if (labels[LABEL_INSTANCE] === o.instance) {
      const agent = names.find((n) => n.startsWith(`${own}-agent-`));
      if (agent !== undefined) {
        if (judged(c, knownAt)) agents.push(agent.slice(`${own}-agent-`.length));
      } else if (labels[LABEL_POOL] === '1' && labels[LABEL_POOL_OWNER] !== o.process) sandboxes.push(c.Id);
    } else if (labels[LABEL_INSTANCE] === undefined && names.some((n) => n.startsWith(`${o.prefix}-agent-`)))
      sandboxes.push(c.Id);
  }
  return { sandboxes, agents };
};

export const classify = (c: Docker.ContainerInfo, o: Owner): Verdict => {
  const labels = c.Labels ?? {};
  const names = c.Names.map((n) => n.replace(/^\//, ''));
  const instance = labels[LABEL_INSTANCE];
  if (instance === o.instance) {
    const own = `${o.prefix}-${o.instance}`;
    const agent = names.find((n) => n.startsWith(`${own}-agent-`));
    if (agent)
      return unknownAgent(c, agent, o)
        ? { kind: 'reclaim', name: agent }
        : { kind: 'adopt', name: agent, legacy: false };
    const pooled = labels[LABEL_POOL] === '1' && names.some((n) => n.startsWith(`${own}-pool-`));
    if (!pooled || poolOwnerLives(labels[LABEL_POOL_OWNER], o)) return { kind: 'keep' };
    const agentId = o.assigned.get(c.Id);
    return agentId === undefined ? { kind: 'remove' } : { kind: 'assign', agentId };
  }
  if (instance !== undefined) return { kind: 'keep' };
  // Made before instance ids existed.
  const agent = names.find((n) => n.startsWith(`${o.prefix}-agent-`));
  if (agent) return o.claim.has(c.Id) ? { kind: 'adopt', name: agent, legacy: true } : { kind: 'keep' };
  const workspace = listedWorkspace(c);
  const pooled = labels[LABEL_POOL] === '1' && names.some((n) => n.startsWith(`${o.prefix}-pool-`));
  return pooled && workspace && o.owns(workspace) ? { kind: 'remove' } : { kind: 'keep' };
};

/** Workspace names the sweep may remove when no container uses them: this instance's, and legacy ones. */
export const sweepable =
  (prefix: string, instance: string) =>
  (name: string): boolean =>
    name.startsWith(`${prefix}-${instance}-`) ||
    name.startsWith(`${prefix}-agent-`) ||
    name.startsWith(`${prefix}-pool-`);
