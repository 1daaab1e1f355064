// list_agents: the agents one agent sees (its children, its descendants, or its team and its own
// descendants), each as a summary of its links, its run and its mailbox.
// Invariant: a list holds only agents the lister reaches (reach.ts), of its own tenant; the lister
// itself shows with the role 'self'.
import type { Agent } from '../../agents/types.ts';
import type { AgentRecord } from '../../store/index.ts';
import { LEAD_NAME, teamIdOf } from '../directory.ts';
import { descendantsOf } from './reach.ts';
import { recordOf, type TeamState } from './state.ts';
import type { AgentSummary } from './types.ts';

async function summary(
  state: TeamState,
  record: AgentRecord,
  self: string,
  role?: AgentSummary['role'],
): Promise<AgentSummary> {
  const [run, unread] = await Promise.all([state.teams.run(record.id), state.teams.undelivered(record.id)]);
  const name = record.links?.name ?? (role === 'lead' ? LEAD_NAME : undefined);
  return {
    agent_id: record.id,
    ...(name === undefined ? {} : { name }),
    role: record.id === self ? 'self' : (role ?? record.links?.role ?? 'child'),
    ...(record.links === undefined ? {} : { parent_id: record.links.parentId }),
    depth: record.links?.depth ?? 0,
    ...(run === undefined
      ? {}
      : {
          description: run.description,
          status: run.status,
          ...(run.output === undefined ? {} : { output: run.output }),
        }),
    busy: state.options.busy(record.id),
    unread: unread.length,
  };
}

/** The agents one agent sees, summarised; the store reads of all of them in flight together. */
export async function list(
  state: TeamState,
  agent: Agent,
  scope: 'children' | 'descendants' | 'team',
): Promise<AgentSummary[]> {
  const { agents } = state;
  const summaries = (rows: { record: AgentRecord; role?: AgentSummary['role'] }[]) =>
    Promise.all(rows.map(({ record, role }) => summary(state, record, agent.id, role)));
  const plain = (records: AgentRecord[]) => records.map((record) => ({ record }));
  if (scope === 'children') return summaries(plain(await agents.children(agent.tenantId, agent.id)));
  if (scope === 'descendants') return summaries(plain(await descendantsOf(state, agent.tenantId, agent.id)));
  const team = teamIdOf(await recordOf(state, agent));
  const lead = team === undefined ? undefined : await agents.get(agent.tenantId, team);
  const members =
    lead === undefined
      ? []
      : [
          { record: lead, role: 'lead' as const },
          ...(await agents.teammates(agent.tenantId, lead.id)).map((record) => ({
            record,
            role: 'teammate' as const,
          })),
        ];
  const own = (await descendantsOf(state, agent.tenantId, agent.id)).filter(
    (r) => r.links?.role !== 'teammate',
  );
  return summaries([...members, ...plain(own)]);
}
