// Where agents' sandboxes live among several nodes, on PostgreSQL: the NodeStore of ../nodes.ts
// over the same rows (`agent_nodes`, `node_cordons`), shared by every replica on the database, so
// an agent whose family moves to another replica is still sent to its node, and a cordon set
// through one replica holds for all. Invariants as on libsql: one node row per agent (an upsert),
// cordons set and cleared idempotently.
import { type NodeStore, TENANT_COUNTS } from '../nodes.ts';
import { type PgDatabase, pgGuarded } from './db.ts';

export const createPgNodeStore = (db: PgDatabase, now: () => number = Date.now): NodeStore => ({
  nodeOf: (agentId) =>
    pgGuarded('read agent node', async () => {
      const row = await db.one<{ node: string }>('SELECT node FROM agent_nodes WHERE agent_id = $1', [
        agentId,
      ]);
      return row?.node;
    }),
  place: (agentId, node) =>
    pgGuarded('write agent node', async () => {
      await db.query(
        `INSERT INTO agent_nodes (agent_id, node, placed_at) VALUES ($1, $2, $3)
         ON CONFLICT (agent_id) DO UPDATE SET node = excluded.node, placed_at = excluded.placed_at`,
        [agentId, node, now()],
      );
    }),
  forget: (agentId) =>
    pgGuarded('forget agent node', async () => {
      await db.query('DELETE FROM agent_nodes WHERE agent_id = $1', [agentId]);
    }),
  agentCounts: () =>
    pgGuarded('count agents per node', async () => {
      const rows = await db.many<{ node: string; n: string }>(
        'SELECT node, count(*) AS n FROM agent_nodes GROUP BY node',
      );
      return new Map(rows.map((r) => [r.node, Number(r.n)]));
    }),
  tenantCounts: (tenantId) =>
    pgGuarded("count a tenant's agents per node", async () => {
      const rows = await db.many<{ node: string; n: string }>(TENANT_COUNTS, [tenantId]);
      return new Map(rows.map((r) => [r.node, Number(r.n)]));
    }),
  cordoned: () =>
    pgGuarded('read node cordons', async () =>
      (await db.many<{ node: string }>('SELECT node FROM node_cordons ORDER BY node')).map((r) => r.node),
    ),
  setCordon: (node, on) =>
    pgGuarded('write node cordon', async () => {
      if (on)
        await db.query(
          'INSERT INTO node_cordons (node, cordoned_at) VALUES ($1, $2) ON CONFLICT (node) DO NOTHING',
          [node, now()],
        );
      else await db.query('DELETE FROM node_cordons WHERE node = $1', [node]);
    }),
});
