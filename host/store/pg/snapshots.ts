// Workspace snapshots on PostgreSQL: the SnapshotStore of ../snapshots.ts over the same rows
// (`snapshots`). Invariants, as on libsql: every read and delete is by tenant.
import { SNAPSHOT_COLUMNS, type SnapshotRow, type SnapshotStore, snapshotOf } from '../snapshots.ts';
import { type PgDatabase, pgGuarded } from './db.ts';

export const createPgSnapshotStore = (db: PgDatabase): SnapshotStore => ({
  add: (r) =>
    pgGuarded('add a snapshot', async () => {
      await db.query(`INSERT INTO snapshots (${SNAPSHOT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [
        r.id,
        r.tenantId,
        r.agentId,
        r.node,
        r.sizeBytes,
        r.bytes,
        r.createdAt,
      ]);
    }),
  get: (tenantId, id) =>
    pgGuarded('read a snapshot', async () => {
      const row = await db.one<SnapshotRow>(
        `SELECT ${SNAPSHOT_COLUMNS} FROM snapshots WHERE tenant_id = $1 AND id = $2`,
        [tenantId, id],
      );
      return row === undefined ? undefined : snapshotOf(row);
    }),
  list: (tenantId, agentId) =>
    pgGuarded('list snapshots', async () => {
      const rows =
        agentId === undefined
          ? await db.many<SnapshotRow>(
              `SELECT ${SNAPSHOT_COLUMNS} FROM snapshots WHERE tenant_id = $1 ORDER BY created_at, id`,
              [tenantId],
            )
          : await db.many<SnapshotRow>(
              `SELECT ${SNAPSHOT_COLUMNS} FROM snapshots WHERE tenant_id = $1 AND agent_id = $2 ORDER BY created_at, id`,
              [tenantId, agentId],
            );
      return rows.map(snapshotOf);
    }),
  remove: (tenantId, id) =>
    pgGuarded('remove a snapshot', async () => {
      const { rowCount } = await db.query('DELETE FROM snapshots WHERE tenant_id = $1 AND id = $2', [
        tenantId,
        id,
      ]);
      return rowCount > 0;
    }),
  totalBytes: (tenantId) =>
    pgGuarded('count snapshot bytes', async () => {
      const row = await db.one<{ n: string | number }>(
        'SELECT coalesce(sum(bytes), 0) AS n FROM snapshots WHERE tenant_id = $1',
        [tenantId],
      );
      return Number(row?.n ?? 0);
    }),
  recorded: (ids) =>
    pgGuarded('look snapshots up', async () => {
      const rows = await db.many<{ id: string }>('SELECT id FROM snapshots WHERE id = ANY($1::text[])', [
        [...ids],
      ]);
      return new Set(rows.map((r) => r.id));
    }),
});
