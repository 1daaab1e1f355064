// An agent's family: the top-level agent it descends from (its own id for a top-level agent), and
// the family's live members. Children and teammates are made by an agent of the family, so a
// family is one unit of ownership (one replica runs it: its mailboxes, board and waits stay in one
// process). Links never change once made, so an agent's family is remembered for good.
// Invariants: the family of an agent whose ancestor is gone is its topmost live ancestor (an
// orphan leads its own family); members are found through the store's links, never guessed; an
// agent is remembered with its tenant, and of() answers only that tenant (to another, whose request
// names an id it does not own, the agent does not exist: no forward, no lease, no takeover).
import type { AgentStore } from '../store/agents-port.ts';

/** Most agents whose family is remembered (a bounded map, oldest forgotten first). */
const REMEMBERED = 100_000;

export interface Families {
  /** The agent's family; undefined when the agent is gone (or another tenant's). */
  of(tenantId: string, agentId: string): Promise<string | undefined>;
  /** Remembers a new agent of `tenantId` and its family (its parent's, or its own). */
  note(tenantId: string, agentId: string, familyId: string): void;
  /** What is remembered, without asking the store. */
  known(agentId: string): string | undefined;
  /** The family's live agents, its root first. */
  members(tenantId: string, familyId: string): Promise<string[]>;
}

export const createFamilies = (agents: AgentStore): Families => {
  /** agent id -> its tenant and family. */
  const remembered = new Map<string, { tenantId: string; familyId: string }>();
  const note = (tenantId: string, agentId: string, familyId: string) => {
    if (remembered.size >= REMEMBERED) {
      const oldest = remembered.keys().next().value;
      if (oldest !== undefined) remembered.delete(oldest);
    }
    remembered.set(agentId, { tenantId, familyId });
  };

  async function of(tenantId: string, agentId: string): Promise<string | undefined> {
    const known = remembered.get(agentId);
    // Another tenant's agent: the store's tenant-scoped read below says it does not exist.
    if (known !== undefined && known.tenantId === tenantId) return known.familyId;
    const record = await agents.get(tenantId, agentId);
    if (record === undefined) return undefined;
    let familyId = record.id;
    const parentId = record.links?.parentId;
    if (parentId !== undefined) familyId = (await of(tenantId, parentId)) ?? record.id;
    note(tenantId, agentId, familyId);
    return familyId;
  }

  async function members(tenantId: string, familyId: string): Promise<string[]> {
    const found: string[] = [familyId];
    const seen = new Set(found);
    for (let i = 0; i < found.length; i++) {
      const id = found[i]!;
      const [children, teammates] = await Promise.all([
        agents.children(tenantId, id),
        agents.teammates(tenantId, id),
      ]);
      for (const record of [...children, ...teammates]) {
        if (seen.has(record.id)) continue;
        seen.add(record.id);
        found.push(record.id);
        note(tenantId, record.id, familyId);
      }
    }
    return found;
  }

  return { of, note, known: (agentId) => remembered.get(agentId)?.familyId, members };
};
