// Whom an agent reaches: its own descendants (the subagent tools' reach) and, with team reach, the
// members of its team, by name or id.
// Invariants: an agent never reaches itself, an agent of another tenant (every read is by the
// caller's tenant), or, with children reach, anything but its own descendants; the walk up a chain
// of parents stops after 64 hops, whatever the store holds.
import type { Agent } from '../../agents/types.ts';
import { SandboxError } from '../../errors.ts';
import type { AgentRecord } from '../../store/index.ts';
import { LEAD_NAME, teamIdOf } from '../directory.ts';
import { recordOf, type TeamState } from './state.ts';
import type { Reach } from './types.ts';

/** The live descendants of `root`, breadth first (one store read per agent with children to list). */
export async function descendantsOf(
  state: TeamState,
  tenantId: string,
  rootId: string,
): Promise<AgentRecord[]> {
  const out: AgentRecord[] = [];
  const queue = [rootId];
  while (queue.length > 0) {
    const id = queue.shift() as string;
    for (const child of await state.agents.children(tenantId, id)) {
      out.push(child);
      queue.push(child.id);
    }
  }
  return out;
}

async function isDescendant(
  state: TeamState,
  tenantId: string,
  ancestorId: string,
  record: AgentRecord,
): Promise<boolean> {
  let current: AgentRecord | undefined = record;
  for (let hops = 0; current?.links !== undefined && hops < 64; hops++) {
    if (current.links.parentId === ancestorId) return true;
    current = await state.agents.get(tenantId, current.links.parentId);
  }
  return false;
}

/** The agent `target` names for `from`: an own descendant by id, or (team reach) a member by name or id. */
export async function resolve(
  state: TeamState,
  from: Agent,
  target: string,
  reach: Reach,
): Promise<AgentRecord> {
  const { agents } = state;
  const notFound = () =>
    new SandboxError(
      'NOT_FOUND',
      `No agent ${JSON.stringify(target.slice(0, 80))} you can reach; list_agents lists them.`,
    );
  if (target === from.id) throw new SandboxError('INVALID_ARGUMENTS', 'That is this agent itself.');
  const byId = await agents.get(from.tenantId, target);
  if (byId !== undefined && (await isDescendant(state, from.tenantId, from.id, byId))) return byId;
  if (reach === 'children') throw notFound();
  const team = teamIdOf(await recordOf(state, from));
  if (team === undefined) throw notFound();
  const lead = await agents.get(from.tenantId, team);
  if (lead !== undefined && (target === LEAD_NAME || target === lead.id)) {
    if (lead.id === from.id) throw new SandboxError('INVALID_ARGUMENTS', 'That is this agent itself.');
    return lead;
  }
  const mate = (await agents.teammates(from.tenantId, team)).find(
    (t) => t.id === target || t.links?.name === target,
  );
  if (mate === undefined) throw notFound();
  if (mate.id === from.id) throw new SandboxError('INVALID_ARGUMENTS', 'That is this agent itself.');
  return mate;
}
