// Re-adoption at start (the node's adopt()): this instance's containers on the engine sorted by
// ownership.ts into the agents' (found again by name), legacy ones the store claims, pool
// containers a crash left assigned but unrenamed (renamed and adopted now), leftovers (removed),
// and agent containers of agents the store does not know (a restore to an older point: reclaimed);
// then this instance's workspaces and link folders no container uses are swept.
// Replicas share the instance: the pool containers of an owner `replicas.alive` says still runs
// are its live warm pool, kept. A replica not yet registered (its first seconds, before it
// listens) is not known to run: another replica starting then removes its first pool
// containers, and its pool makes others (pool.ts replaces an item whose container went away).
// Invariants: never touches another instance's containers, workspaces or link folders, nor the
// pool of a process that still runs (an owner whose liveness cannot be read counts as running); a
// workspace any container still uses (whoever's it is) is kept; adopted names only add up, so
// lookup.ts asks the engine about them alone from now on (one process per instance; replicas make
// containers of the instance at any time, so with them lookup.ts asks about any name).
import type Docker from 'dockerode';
import { SandboxError } from '../../errors.ts';
import type { AdoptOptions, AdoptQuestions } from '../nodes/types.ts';
import { LABEL_INSTANCE, LABEL_MANAGED, LABEL_POOL_OWNER, LABEL_TENANT } from './config.ts';
import { fromDocker } from './errors.ts';
import { sweepLinkDirs } from './links.ts';
import { type NodeBase, removeContainer } from './node-state.ts';
import { classify, listedWorkspace, questionsOf, sweepable } from './ownership.ts';
import type { WorkspaceMount } from './workspaces.ts';

export type { AdoptOptions };

/** The pool owners of this instance's listed containers that still run (other than this process). */
async function liveOwners(
  list: readonly Docker.ContainerInfo[],
  s: NodeBase,
  alive: ((owner: string) => Promise<boolean>) | undefined,
): Promise<Set<string>> {
  const live = new Set<string>();
  if (alive === undefined) return live;
  const owners = new Set<string>();
  for (const c of list) {
    const labels = c.Labels ?? {};
    const owner = labels[LABEL_POOL_OWNER];
    if (labels[LABEL_INSTANCE] === s.instance && owner !== undefined && owner !== s.owner) owners.add(owner);
  }
  for (const owner of owners) {
    // Unreadable (the database away): kept, since removing a live replica's pool is worse than a
    // leftover the next start removes.
    const lives = await alive(owner).catch((e: unknown) => {
      s.onError(e);
      return true;
    });
    if (lives) live.add(owner);
  }
  return live;
}

/** What adopt() would need the store's word on (ownership.ts questionsOf), read from the engine now. */
export async function adoptQuestions(s: NodeBase, knownAt?: number): Promise<AdoptQuestions> {
  const list = await listManaged(s);
  return questionsOf(list, { prefix: s.prefix, instance: s.instance, process: s.owner }, knownAt);
}

const listManaged = (s: NodeBase): Promise<Docker.ContainerInfo[]> =>
  s.docker.listContainers({ all: true, filters: { label: [`${LABEL_MANAGED}=1`] } }).catch((e) => {
    throw fromDocker(e, 'Listing sandboxes');
  });

/** The names of this instance's agent containers on the engine (see the header). */
export async function adopt(s: NodeBase, adoptOptions: AdoptOptions = {}): Promise<string[]> {
  const { docker, names, prefix, instance, onError, links } = s;
  const list = await listManaged(s);
  const self = {
    prefix,
    instance,
    process: s.owner,
    live: await liveOwners(list, s, adoptOptions.replicas?.alive),
    claim: new Set(adoptOptions.claim ?? []),
    assigned: adoptOptions.assigned ?? new Map<string, string>(),
    owns: (m: WorkspaceMount) => s.workspaces.owns(m),
    ...(adoptOptions.known === undefined
      ? {}
      : { known: new Set([...adoptOptions.known].map((id) => names.agent(id))) }),
    // The node protocol's answer (AdoptOptions.unknown): slugs, named as agent ids are.
    ...(adoptOptions.unknown === undefined
      ? {}
      : { unknown: new Set([...adoptOptions.unknown].map((slug) => names.agent(slug))) }),
    ...(adoptOptions.knownAt === undefined ? {} : { knownAt: adoptOptions.knownAt }),
  };
  const adopted: string[] = [];
  // Workspaces any container still uses, whoever's it is: the sweep keeps them.
  const inUse: WorkspaceMount[] = [];
  for (const c of list) {
    const verdict = classify(c, self);
    if (verdict.kind === 'remove') {
      await removeContainer(s, docker.getContainer(c.Id)).catch(onError);
      continue;
    }
    if (verdict.kind === 'reclaim') {
      // Its workspace goes with the sweep below (no container uses it any more).
      onError(
        new SandboxError(
          'SANDBOX_UNAVAILABLE',
          `Removed sandbox ${verdict.name}: its agent is not in the store (restored to an older point?).`,
          { data: { container: c.Id } },
        ),
      );
      await removeContainer(s, docker.getContainer(c.Id)).catch(onError);
      continue;
    }
    if (verdict.kind === 'assign') {
      // An assignment whose rename a crash interrupted: finish it, then it is the agent's.
      const name = names.agent(verdict.agentId);
      try {
        await docker.getContainer(c.Id).rename({ name });
        adopted.push(name);
      } catch (e) {
        onError(fromDocker(e, 'Naming an assigned pooled sandbox', { agentId: verdict.agentId }));
      }
      const mount = listedWorkspace(c);
      if (mount) inUse.push(mount);
      continue;
    }
    const mount = listedWorkspace(c);
    if (mount) inUse.push(mount);
    if (verdict.kind === 'adopt') {
      adopted.push(verdict.name);
      if (verdict.legacy) s.legacy.set(verdict.name, c.Id);
      const tenant = c.Labels?.[LABEL_TENANT];
      if (tenant !== undefined) s.dormant.set(verdict.name, tenant);
    }
  }
  // This instance's workspaces whose container is gone (a crash between the two creations, a
  // removal by hand); another instance's are not ours to judge, even in a shared folder.
  await s.workspaces.sweep(inUse, false, sweepable(prefix, instance)).catch(onError);
  // Link folders no container mounts (a container removed behind our back, a crash mid-create).
  if (links !== undefined) await sweepLinkDirs(links, list).catch(onError);
  // With replicas, any name may appear later: lookups ask the engine (adoptedNames stays unset).
  if (adoptOptions.replicas === undefined) s.adoptedNames = new Set([...(s.adoptedNames ?? []), ...adopted]);
  return adopted;
}
