// Where agents' sandboxes live among several nodes (migration 22), for placement
// (host/sandbox/nodes/placement.ts): each agent's node, and the nodes an operator cordoned at run
// time. The store decides nothing: placement reads and writes these rows. The PostgreSQL twin is
// pg/nodes.ts, over the same rows.
// Invariants: an agent has at most one node row (placing it again replaces it); a cordon is one
// row per node name, set and cleared idempotently. Every method returns a Promise; this libsql
// implementation runs its one statement synchronously inside it.
import { type Database, guarded } from './db.ts';

export interface NodeStore {
  /** The node the agent's sandbox was placed on; undefined when none was recorded. */
  nodeOf(agentId: string): Promise<string | undefined>;
  /** Records (or moves) the agent's node. */
  place(agentId: string, node: string): Promise<void>;
  /** Forgets the agent's node (its sandbox was destroyed). */
  forget(agentId: string): Promise<void>;
  /** How many agents each node holds, by node name (nodes with none are absent). */
  agentCounts(): Promise<Map<string, number>>;
  /** How many of the tenant's live (not deleted) agents each node holds (nodes with none are absent). */
  tenantCounts(tenantId: string): Promise<Map<string, number>>;
  /** The nodes cordoned at run time, by name. */
  cordoned(): Promise<string[]>;
  /** Cordons (true) or uncordons (false) the node; idempotent. */
  setCordon(node: string, cordoned: boolean): Promise<void>;
}

/** One tenant's live agents per node (both backends; `$1` the tenant): the tenant's agents by its index. */
export const TENANT_COUNTS = `SELECT n.node AS node, count(*) AS n FROM agents a JOIN agent_nodes n ON n.agent_id = a.id
  WHERE a.tenant_id = $1 AND a.deleted_at IS NULL GROUP BY n.node`;

export const createNodeStore = (db: Database, now: () => number = Date.now): NodeStore => {
  const select = db.prepare('SELECT node FROM agent_nodes WHERE agent_id = ?');
  const upsert = db.prepare(
    `INSERT INTO agent_nodes (agent_id, node, placed_at) VALUES (?, ?, ?)
     ON CONFLICT(agent_id) DO UPDATE SET node = excluded.node, placed_at = excluded.placed_at`,
  );
  const remove = db.prepare('DELETE FROM agent_nodes WHERE agent_id = ?');
  const counts = db.prepare('SELECT node, count(*) AS n FROM agent_nodes GROUP BY node');
  const ofTenant = db.prepare(TENANT_COUNTS.replace('$1', '?'));
  const cordons = db.prepare('SELECT node FROM node_cordons ORDER BY node');
  const cordon = db.prepare(
    'INSERT INTO node_cordons (node, cordoned_at) VALUES (?, ?) ON CONFLICT(node) DO NOTHING',
  );
  const uncordon = db.prepare('DELETE FROM node_cordons WHERE node = ?');
  return {
    nodeOf: async (agentId) =>
      guarded('read agent node', () => (select.all(agentId)[0] as { node: string } | undefined)?.node),
    place: async (agentId, node) =>
      guarded('write agent node', () => {
        upsert.run(agentId, node, now());
      }),
    forget: async (agentId) =>
      guarded('forget agent node', () => {
        remove.run(agentId);
      }),
    agentCounts: async () =>
      guarded(
        'count agents per node',
        () => new Map((counts.all() as { node: string; n: number }[]).map((r) => [r.node, Number(r.n)])),
      ),
    tenantCounts: async (tenantId) =>
      guarded(
        "count a tenant's agents per node",
        () =>
          new Map(
            (ofTenant.all(tenantId) as { node: string; n: number }[]).map((r) => [r.node, Number(r.n)]),
          ),
      ),
    cordoned: async () =>
      guarded('read node cordons', () => (cordons.all() as { node: string }[]).map((r) => r.node)),
    setCordon: async (node, on) =>
      guarded('write node cordon', () => {
        if (on) cordon.run(node, now());
        else uncordon.run(node);
      }),
  };
};
