// What is left of a deleted tenant in the store, removed in bounded slices (the TenantPurgeStore;
// host/tenants/deletion.ts runs it after every agent of the tenant went through the agent
// service's deletion). One list of kinds, in an order that never breaks a reference (a session's
// events before the session, an agent's jobs before the agent, packages before their plugin),
// and one statement shape for both backends: `DELETE … WHERE key IN (SELECT key … LIMIT n)`, on
// SQLite by rowid (or the primary key of a WITHOUT ROWID table), on PostgreSQL by ctid.
// Invariants: an agent row goes only once the agent is deleted and its sandbox removed (an agent
// still holding a sandbox is the reaper's pointer to a container: reapDeleted() in
// host/agents/service/deletion.ts); the tenant's own row stays (it says `deleted`); nothing of
// another tenant is touched (every statement is scoped by the tenant id). Known leftover (libsql):
// the contentless full-text index `events_fts` keeps the tokens of the removed log entries; no
// search reaches them (a hit is joined to `event_index`, whose rows are gone).
import { type Database, guarded, immediate } from './db.ts';

/** A kind of row a tenant owns: how to find its rows and their key. */
export interface PurgeKind {
  /** The name progress reports (the table's). */
  kind: string;
  /** The columns that name a row; undefined: the table's rowid (SQLite) or ctid (PostgreSQL). */
  key?: string;
  /** The condition on the tenant's rows; every `?` is the tenant id. */
  where: string;
}

/** A session's id is its agent's (event-log-libsql-read.ts tenantOfSession). */
const SESSIONS_OF_TENANT = 'SELECT a.id FROM agents a WHERE a.tenant_id = ?';

/** In the order they are removed. */
export const PURGE_KINDS: readonly PurgeKind[] = [
  { kind: 'events', key: 'session_id, seq', where: `session_id IN (${SESSIONS_OF_TENANT})` },
  { kind: 'event_index', where: 'tenant_id = ?' },
  { kind: 'requests', where: `session_id IN (${SESSIONS_OF_TENANT})` },
  { kind: 'session_state', where: `session_id IN (${SESSIONS_OF_TENANT})` },
  { kind: 'payloads', where: 'tenant_id = ?' },
  { kind: 'tenant_log_usage', where: 'tenant_id = ?' },
  { kind: 'plugin_packages', where: 'plugin_id IN (SELECT p.id FROM plugins p WHERE p.tenant_id = ?)' },
  { kind: 'plugins', where: 'tenant_id = ?' },
  { kind: 'schedules', where: 'tenant_id = ?' },
  { kind: 'skill_files', where: 'tenant_id = ?' },
  { kind: 'skills', where: 'tenant_id = ?' },
  { kind: 'child_runs', where: 'tenant_id = ?' },
  { kind: 'mailbox', where: 'tenant_id = ?' },
  { kind: 'team_tasks', where: 'tenant_id = ?' },
  { kind: 'team_boards', where: 'tenant_id = ?' },
  { kind: 'team_write_grants', where: 'tenant_id = ?' },
  { kind: 'call_batches', where: 'tenant_id = ?' },
  { kind: 'tenant_egress', where: 'tenant_id = ?' },
  { kind: 'tenant_egress_ca', where: 'tenant_id = ?' },
  { kind: 'egress_usage', where: 'tenant_id = ?' },
  { kind: 'tenant_settings', where: 'tenant_id = ?' },
  // Their files went with the agent service's deletion of them first (host/tenants/deletion.ts).
  { kind: 'snapshots', where: 'tenant_id = ?' },
  { kind: 'jobs', where: 'agent_id IN (SELECT a.id FROM agents a WHERE a.tenant_id = ?)' },
  { kind: 'sessions', where: `id IN (${SESSIONS_OF_TENANT})` },
  { kind: 'agents', where: 'tenant_id = ? AND deleted_at IS NOT NULL AND sandbox_id IS NULL' },
  { kind: 'api_keys', where: 'tenant_id = ?' },
];

/** How many `?` a condition holds (each is bound to the tenant id). */
export const placeholders = (where: string): number => where.split('?').length - 1;

export interface TenantPurgeStore {
  /** What is left of the tenant, by kind (only kinds with rows), agents not yet deleted included. */
  remaining(tenantId: string): Promise<Record<string, number>>;
  /**
   * Removes at most `limit` rows of the first kind that has any, in one transaction; how many it
   * removed (0: nothing left that may go; agents that are live or still hold a sandbox stay).
   */
  purgeSlice(tenantId: string, limit: number): Promise<number>;
}

export const createTenantPurgeStore = (db: Database): TenantPurgeStore => {
  const steps = PURGE_KINDS.map(({ kind, key, where }) => {
    const k = key ?? 'rowid';
    const keyList = key?.includes(',') ? `(${k})` : k;
    return {
      kind,
      params: placeholders(where),
      // The agents still to delete are counted with the deleted ones: progress shows them.
      count: db.prepare(
        `SELECT count(*) AS n FROM ${kind} WHERE ${kind === 'agents' ? 'tenant_id = ?' : where}`,
      ),
      remove: db.prepare(
        `DELETE FROM ${kind} WHERE ${keyList} IN (SELECT ${k} FROM ${kind} WHERE ${where} LIMIT ?)`,
      ),
    };
  });
  return {
    remaining: async (tenantId) =>
      guarded('read tenant remains', () => {
        const left: Record<string, number> = {};
        for (const step of steps) {
          const args = step.kind === 'agents' ? [tenantId] : Array(step.params).fill(tenantId);
          const n = Number((step.count.all(...args)[0] as { n: number }).n);
          if (n > 0) left[step.kind] = n;
        }
        return left;
      }),
    purgeSlice: async (tenantId, limit) =>
      guarded('remove tenant rows', () =>
        immediate(db, () => {
          for (const step of steps) {
            const removed = step.remove.run(...Array(step.params).fill(tenantId), limit).changes;
            if (removed > 0) return removed;
          }
          return 0;
        }),
      ),
  };
};
