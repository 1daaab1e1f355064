// The libsql LogRetentionStore (log-retention-port.ts says the rules; host/tenants/retention.ts
// runs it): a slice is one BEGIN IMMEDIATE transaction that removes a prefix of one session's
// events, their `event_index` entries, the payloads whose last use went with them, and their bytes
// from the tenant's usage, and raises the session's first_seq. compact() runs incremental_vacuum.
// Known leftover: the contentless full-text index `events_fts` keeps the tokens of removed events
// (a contentless FTS5 table forgets a row only when told its exact text); no search reaches them,
// every hit being joined to `event_index`, whose entries went (as tenant-purge.ts says).
import { type Database, guarded, immediate } from './db.ts';
import { usedShas } from './event-log-rows.ts';
import {
  type Cut,
  type LogRetentionStore,
  nextCut,
  prefixOf,
  type RetentionRule,
  type SessionHead,
  type SweptSlice,
  type WeighedRow,
} from './log-retention-port.ts';

/** A session's id is its agent's (event-log-libsql-read.ts tenantOfSession). */
const HEAD = '(SELECT e.at FROM events e WHERE e.session_id = s.id ORDER BY e.seq LIMIT 1)';

/** What the budget counted for a row at append (event-log-budget.ts rowBytes; migration 3 alike). */
export const ROW_BYTES_SQL =
  '48 + length(CAST(data AS BLOB)) + coalesce(length(refs), 0) + length(type)' +
  ' + coalesce(length(call_id), 0) + coalesce(length(parent_call_id), 0)';

const prepare = (db: Database) => ({
  tenants: db.prepare('SELECT tenant_id, bytes FROM tenant_log_usage WHERE bytes > 0 ORDER BY tenant_id'),
  usage: db.prepare('SELECT bytes FROM tenant_log_usage WHERE tenant_id = ?'),
  deleted: db.prepare(
    `SELECT s.id AS id FROM agents a JOIN sessions s ON s.id = a.id
     WHERE a.tenant_id = ? AND a.deleted_at IS NOT NULL AND a.deleted_at < ?
       AND EXISTS (SELECT 1 FROM events e WHERE e.session_id = s.id) LIMIT 1`,
  ),
  heads: db.prepare(
    `SELECT id, first_at FROM (SELECT s.id AS id, ${HEAD} AS first_at
       FROM agents a JOIN sessions s ON s.id = a.id WHERE a.tenant_id = ?)
     WHERE first_at IS NOT NULL ORDER BY first_at, id LIMIT 2`,
  ),
  rows: db.prepare(
    `SELECT seq, at, ${ROW_BYTES_SQL} AS bytes, refs FROM events WHERE session_id = ? ORDER BY seq LIMIT ?`,
  ),
  removeEvents: db.prepare('DELETE FROM events WHERE session_id = ? AND seq <= ?'),
  removeIndex: db.prepare('DELETE FROM event_index WHERE session_id = ? AND seq <= ?'),
  unuse: db.prepare(
    `UPDATE payloads SET uses = uses - ? WHERE tenant_id = ? AND sha256 = ?
     RETURNING uses, bytes`,
  ),
  removePayload: db.prepare('DELETE FROM payloads WHERE tenant_id = ? AND sha256 = ? AND uses <= 0'),
  release: db.prepare('UPDATE tenant_log_usage SET bytes = max(0, bytes - ?) WHERE tenant_id = ?'),
  raiseFirst: db.prepare('UPDATE sessions SET first_seq = max(first_seq, ?) WHERE id = ?'),
  hasIndex: db.prepare("SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = 'event_index'"),
});

type Statements = ReturnType<typeof prepare>;

/** The cut of this slice: a deleted agent's log first, then the oldest session by age or bytes. */
function cutOf(st: Statements, tenantId: string, rule: RetentionRule): Cut | undefined {
  if (rule.deletedBefore !== undefined) {
    const gone = st.deleted.all(tenantId, rule.deletedBefore)[0] as { id: string } | undefined;
    if (gone !== undefined)
      return {
        sessionId: gone.id,
        reason: 'deleted',
        before: Number.POSITIVE_INFINITY,
        upTo: Number.NEGATIVE_INFINITY,
        needBytes: 0,
      };
  }
  if (rule.before === undefined && rule.maxBytes === undefined) return undefined;
  const heads = (st.heads.all(tenantId) as { id: string; first_at: number }[]).map(
    (h): SessionHead => ({ id: h.id, firstAt: h.first_at }),
  );
  const usage = (st.usage.all(tenantId)[0] as { bytes: number } | undefined)?.bytes ?? 0;
  return nextCut(heads, rule, usage);
}

function sweep(st: Statements, tenantId: string, rule: RetentionRule, limit: number): SweptSlice {
  const cut = cutOf(st, tenantId, rule);
  if (cut === undefined) return { events: 0, bytes: 0, payloads: 0 };
  const rows = st.rows.all(cut.sessionId, Math.max(1, limit)) as WeighedRow[];
  const taken = prefixOf(rows, cut);
  if (taken === 0) return { events: 0, bytes: 0, payloads: 0 };
  const last = rows[taken - 1]!.seq;
  let bytes = 0;
  const uses = new Map<string, number>();
  for (const row of rows.slice(0, taken)) {
    bytes += row.bytes;
    for (const sha of usedShas(row.refs)) uses.set(sha, (uses.get(sha) ?? 0) + 1);
  }
  let payloads = 0;
  for (const [sha, n] of uses) {
    const left = st.unuse.all(n, tenantId, sha)[0] as { uses: number; bytes: number } | undefined;
    if (left !== undefined && left.uses <= 0 && st.removePayload.run(tenantId, sha).changes > 0) {
      payloads++;
      bytes += left.bytes;
    }
  }
  st.removeEvents.run(cut.sessionId, last);
  if (st.hasIndex.all().length > 0) st.removeIndex.run(cut.sessionId, last);
  st.release.run(bytes, tenantId);
  st.raiseFirst.run(last + 1, cut.sessionId);
  return { events: taken, bytes, payloads, sessionId: cut.sessionId, firstSeq: last + 1, reason: cut.reason };
}

/** A numeric pragma's value (libsql answers rows, `{ simple: true }` included). */
const pragmaValue = (db: Database, name: string): number =>
  Number((db.pragma(name) as Record<string, unknown>[])[0]?.[name] ?? 0);

export const createLogRetentionStore = (db: Database): LogRetentionStore => {
  let st: Statements | undefined;
  const statements = () => (st ??= prepare(db));
  return {
    tenants: async () =>
      guarded('read log usage', () =>
        (statements().tenants.all() as { tenant_id: string; bytes: number }[]).map((r) => ({
          tenantId: r.tenant_id,
          bytes: r.bytes,
        })),
      ),
    sweepSlice: async (tenantId, rule, limit) =>
      guarded('remove expired events', () => immediate(db, () => sweep(statements(), tenantId, rule, limit))),
    compact: async (pages) =>
      guarded('give free pages back', () => {
        const mode = pragmaValue(db, 'auto_vacuum');
        const free = () => pragmaValue(db, 'freelist_count');
        // 2 = INCREMENTAL; a store made before retention (0, NONE) reuses its free pages instead.
        if (mode !== 2 || pages < 1) return { freed: 0, left: free() };
        const before = free();
        // Never 0 here: incremental_vacuum(0) would free the whole list in one step.
        db.exec(`PRAGMA incremental_vacuum(${Math.max(1, Math.trunc(pages))})`);
        const left = free();
        return { freed: before - left, left };
      }),
  };
};
