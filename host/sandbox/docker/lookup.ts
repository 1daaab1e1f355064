// Finding an agent's container: the one this process knows, else this instance's by name, else a
// legacy one adopt() found claimed by the store. After adopt() (one process per instance), the
// engine can only hold a container for an agent this process does not know when adopt() listed
// it, so only those names cost an engine call; with replicas every name may (adopt.ts).
// Invariants: a container found by name becomes the agent's Entry (its tenant, limits and workspace
// read from the engine); a known entry whose container vanished stays known (its handles follow a
// replacement) but reads as absent.
import type Docker from 'dockerode';
import { LABEL_TENANT } from './config.ts';
import { limitsOf } from './containers.ts';
import { fromDocker, isNotFound } from './errors.ts';
import type { Entry, NodeBase } from './node-state.ts';
import { agentLimits } from './runtimes.ts';
import { workspaceOf } from './workspaces.ts';

/** Whether the engine may hold a container for an agent this process does not know. */
function mayExist(s: NodeBase, agentId: string): boolean {
  return (
    s.adoptedNames === undefined ||
    s.adoptedNames.has(s.names.agent(agentId)) ||
    s.legacy.has(s.names.legacyAgent(agentId))
  );
}

async function inspect(
  container: Docker.Container,
  agentId: string,
): Promise<Docker.ContainerInspectInfo | undefined> {
  try {
    return await container.inspect();
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw fromDocker(e, 'Looking up the sandbox', { agentId });
  }
}

/** The agent's entry and its container's id, or undefined (see the header). */
export async function lookup(
  s: NodeBase,
  agentId: string,
): Promise<{ entry: Entry; id: string } | undefined> {
  const known = s.entries.get(agentId);
  if (known) {
    const info = await inspect(known.container, agentId);
    return info && { entry: known, id: info.Id };
  }
  if (!mayExist(s, agentId)) return undefined;
  for (const ref of [s.names.agent(agentId), s.legacy.get(s.names.legacyAgent(agentId))]) {
    if (ref === undefined) continue;
    const info = await inspect(s.docker.getContainer(ref), agentId);
    if (!info) continue;
    const entry: Entry = {
      agentId,
      tenantId: info.Config.Labels?.[LABEL_TENANT],
      container: s.docker.getContainer(info.Id),
      limits: { ...s.defaults, ...agentLimits(s.runtimes.of(info), await limitsOf(info, s.workspaces)) },
      workspace: workspaceOf(info),
      runtime: s.runtimes.of(info),
    };
    s.entries.set(agentId, entry);
    s.dormant.delete(s.names.agent(agentId));
    s.dormant.delete(s.names.legacyAgent(agentId));
    return { entry, id: info.Id };
  }
  return undefined;
}
