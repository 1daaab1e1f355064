// Workspace snapshots (migration 23): one row per snapshot an agent's workspace was copied into
// (POST /v1/agents/:id/snapshots). The store keeps where it lives (the node) and what it holds;
// the snapshot's file is the node's (host/sandbox/docker/workspaces/loop-snapshots.ts). The
// PostgreSQL twin is pg/snapshots.ts, over the same rows.
// Invariants: every read and delete is by tenant, so another tenant's snapshot reads as absent;
// a row is written only once its file is whole, and removed before its file is.
// Every method returns a Promise (the port a network database can implement); this libsql
// implementation runs its one statement synchronously inside it.
import { type Database, guarded } from './db.ts';

export interface SnapshotRecord {
  id: string;
  tenantId: string;
  /** The agent whose workspace it copies (it may be gone since). */
  agentId: string;
  /** The node whose disk holds it. */
  node: string;
  /** The workspace's size limit when it was taken: an agent made from it gets that limit. */
  sizeBytes: number;
  /** Host disk it takes (a sparse copy: the blocks in use); what the tenant's quota counts. */
  bytes: number;
  createdAt: number;
}

export interface SnapshotStore {
  add(record: SnapshotRecord): Promise<void>;
  /** The tenant's snapshot; undefined for another tenant's or a deleted one. */
  get(tenantId: string, id: string): Promise<SnapshotRecord | undefined>;
  /** The tenant's snapshots (of one agent when given), oldest first. */
  list(tenantId: string, agentId?: string): Promise<SnapshotRecord[]>;
  /** Removes the tenant's snapshot row; false when it had none of that id. */
  remove(tenantId: string, id: string): Promise<boolean>;
  /** The host disk all of the tenant's snapshots take. */
  totalBytes(tenantId: string): Promise<number>;
  /** Of `ids`, those with a row, whichever tenant's (the start's sweep of files no row names). */
  recorded(ids: readonly string[]): Promise<Set<string>>;
}

export interface SnapshotRow {
  id: string;
  tenant_id: string;
  agent_id: string;
  node: string;
  size_bytes: number | string;
  bytes: number | string;
  created_at: number | string;
}

export const SNAPSHOT_COLUMNS = 'id, tenant_id, agent_id, node, size_bytes, bytes, created_at';

/** A row as a record (PostgreSQL answers bigints as strings). */
export const snapshotOf = (row: SnapshotRow): SnapshotRecord => ({
  id: row.id,
  tenantId: row.tenant_id,
  agentId: row.agent_id,
  node: row.node,
  sizeBytes: Number(row.size_bytes),
  bytes: Number(row.bytes),
  createdAt: Number(row.created_at),
});

export const createSnapshotStore = (db: Database): SnapshotStore => {
  const insert = db.prepare(`INSERT INTO snapshots (${SNAPSHOT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`);
  const one = db.prepare(`SELECT ${SNAPSHOT_COLUMNS} FROM snapshots WHERE tenant_id = ? AND id = ?`);
  const all = db.prepare(
    `SELECT ${SNAPSHOT_COLUMNS} FROM snapshots WHERE tenant_id = ? ORDER BY created_at, id`,
  );
  const ofAgent = db.prepare(
    `SELECT ${SNAPSHOT_COLUMNS} FROM snapshots WHERE tenant_id = ? AND agent_id = ? ORDER BY created_at, id`,
  );
  const del = db.prepare('DELETE FROM snapshots WHERE tenant_id = ? AND id = ?');
  const total = db.prepare('SELECT coalesce(sum(bytes), 0) AS n FROM snapshots WHERE tenant_id = ?');
  const byId = db.prepare('SELECT id FROM snapshots WHERE id = ?');
  return {
    add: async (r) =>
      guarded('add a snapshot', () => {
        insert.run(r.id, r.tenantId, r.agentId, r.node, r.sizeBytes, r.bytes, r.createdAt);
      }),
    get: async (tenantId, id) =>
      guarded('read a snapshot', () => {
        const row = one.all(tenantId, id)[0] as SnapshotRow | undefined;
        return row === undefined ? undefined : snapshotOf(row);
      }),
    list: async (tenantId, agentId) =>
      guarded('list snapshots', () =>
        ((agentId === undefined ? all.all(tenantId) : ofAgent.all(tenantId, agentId)) as SnapshotRow[]).map(
          snapshotOf,
        ),
      ),
    remove: async (tenantId, id) => guarded('remove a snapshot', () => del.run(tenantId, id).changes > 0),
    totalBytes: async (tenantId) =>
      guarded('count snapshot bytes', () => Number((total.all(tenantId)[0] as { n: number }).n)),
    recorded: async (ids) =>
      guarded('look snapshots up', () => new Set(ids.filter((id) => byId.all(id).length > 0))),
  };
};
