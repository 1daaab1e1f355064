// Who is in which team, read from the agents' stored links (host/store/agents.ts): a team is a lead
// (an agent that spawned teammates with spawn_teammate) and its teammates, and its id is the lead's
// agent id. The task board (teams/board/) resolves teams through this port (its TeamDirectory:
// assemble.ts wires it). Stateless: every
// answer is read from the store, so a restart changes nothing.
import type { AgentRecord, AgentStore } from '../store/index.ts';

export interface TeamMember {
  /** The member's agent id. */
  id: string;
  /** A teammate's name; the lead is `lead`. */
  name: string;
  role: 'lead' | 'teammate';
}

export interface TeamDirectory {
  /** The team of an agent (its lead's id), or undefined when it is in none. */
  teamOf(agentId: string): Promise<string | undefined>;
  /** The lead, then its live teammates, oldest first; empty for an unknown or deleted team. */
  members(teamId: string): Promise<TeamMember[]>;
  /**
   * The live agents above `agentId` (links.parentId, then its parent's…), nearest first; [] for a
   * top-level agent; undefined when one of them is gone or the chain is longer than MAX_CHAIN.
   */
  ancestors(agentId: string): Promise<string[] | undefined>;
}

/** Deeper than any tenant's maxDepth may go; a longer chain is a broken store. */
const MAX_CHAIN = 64;

/** The name the lead goes by in its team. */
export const LEAD_NAME = 'lead';

/** The team of a stored agent: a teammate's lead, a lead's own id, or none. */
export const teamIdOf = (record: AgentRecord): string | undefined =>
  record.links?.teamId ??
  ((record.config as { teams?: unknown } | null)?.teams === true ? record.id : undefined);

export const createTeamDirectory = (agents: Pick<AgentStore, 'byId' | 'teammates'>): TeamDirectory => {
  // Agent ids are unique across tenants, so the directory needs no tenant to find one.
  const find = (agentId: string) => agents.byId(agentId);

  return {
    async teamOf(agentId) {
      const record = await find(agentId);
      return record === undefined ? undefined : teamIdOf(record);
    },
    // One read per level: each parent's id is in the record of the agent below it.
    async ancestors(agentId) {
      const chain: string[] = [];
      let links = (await find(agentId))?.links;
      while (links !== undefined) {
        if (chain.length >= MAX_CHAIN) return undefined;
        const parent = await find(links.parentId);
        if (parent === undefined) return undefined;
        chain.push(parent.id);
        links = parent.links;
      }
      return chain;
    },
    async members(teamId) {
      // An agent in no team leads a team of one (the board's view of it).
      const lead = await find(teamId);
      if (lead === undefined) return [];
      return [
        { id: lead.id, name: LEAD_NAME, role: 'lead' },
        ...(await agents.teammates(lead.tenantId, teamId)).map(
          (r): TeamMember => ({ id: r.id, name: r.links?.name ?? r.id, role: 'teammate' }),
        ),
      ];
    },
  };
};
