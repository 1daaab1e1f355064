// The LogRetentionStore on PostgreSQL (../log-retention-port.ts says the rules; the libsql twin
// is ../log-retention.ts, over the same rows): a slice is one transaction that locks the session's
// row first, as the event writes do (pg/event-log-write.ts: sessions, then payloads, then usage),
// so a slice and a replica appending to the same session wait for each other and never deadlock.
// Its event_index entries carry their own search vector, so the full-text index follows exactly.
// Space: plain (auto)VACUUM makes the removed rows' space reusable inside the tables; compact()
// does nothing (VACUUM FULL, which gives it back to the file system, locks the tables: an operator's
// step, docs/operations.md).

import { usedShas } from '../event-log-rows.ts';
import {
  type Cut,
  type LogRetentionStore,
  nextCut,
  prefixOf,
  type RetentionRule,
  type SweptSlice,
  type WeighedRow,
} from '../log-retention-port.ts';
import { type PgDatabase, type PgQueries, pgGuarded } from './db.ts';

/** What the budget counted for a row at append (event-log-budget.ts rowBytes). */
const ROW_BYTES_SQL =
  '48 + octet_length(data) + coalesce(length(refs), 0) + length(type)' +
  ' + coalesce(length(call_id), 0) + coalesce(length(parent_call_id), 0)';

async function cutOf(tx: PgQueries, tenantId: string, rule: RetentionRule): Promise<Cut | undefined> {
  if (rule.deletedBefore !== undefined) {
    const gone = await tx.one<{ id: string }>(
      `SELECT s.id FROM agents a JOIN sessions s ON s.id = a.id
       WHERE a.tenant_id = $1 AND a.deleted_at IS NOT NULL AND a.deleted_at < $2
         AND EXISTS (SELECT 1 FROM events e WHERE e.session_id = s.id) LIMIT 1`,
      [tenantId, rule.deletedBefore],
    );
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
  const heads = await tx.many<{ id: string; first_at: string | number }>(
    `SELECT id, first_at FROM (
       SELECT s.id, (SELECT e.at FROM events e WHERE e.session_id = s.id ORDER BY e.seq LIMIT 1) AS first_at
       FROM agents a JOIN sessions s ON s.id = a.id WHERE a.tenant_id = $1) h
     WHERE first_at IS NOT NULL ORDER BY first_at, id LIMIT 2`,
    [tenantId],
  );
  const usage = await tx.one<{ bytes: string | number }>(
    'SELECT bytes FROM tenant_log_usage WHERE tenant_id = $1',
    [tenantId],
  );
  return nextCut(
    heads.map((h) => ({ id: h.id, firstAt: Number(h.first_at) })),
    rule,
    Number(usage?.bytes ?? 0),
  );
}

async function sweep(
  tx: PgQueries,
  tenantId: string,
  rule: RetentionRule,
  limit: number,
): Promise<SweptSlice> {
  const cut = await cutOf(tx, tenantId, rule);
  if (cut === undefined) return { events: 0, bytes: 0, payloads: 0 };
  await tx.query('SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE', [cut.sessionId]);
  const rows = (
    await tx.many<{ seq: string | number; at: string | number; bytes: string | number; refs: string | null }>(
      `SELECT seq, at, ${ROW_BYTES_SQL} AS bytes, refs FROM events WHERE session_id = $1 ORDER BY seq LIMIT $2`,
      [cut.sessionId, Math.max(1, limit)],
    )
  ).map((r): WeighedRow => ({ seq: Number(r.seq), at: Number(r.at), bytes: Number(r.bytes), refs: r.refs }));
  const taken = prefixOf(rows, cut);
  if (taken === 0) return { events: 0, bytes: 0, payloads: 0 };
  const last = rows[taken - 1]!.seq;
  let bytes = 0;
  const uses = new Map<string, number>();
  for (const row of rows.slice(0, taken)) {
    bytes += row.bytes;
    for (const sha of usedShas(row.refs)) uses.set(sha, (uses.get(sha) ?? 0) + 1);
  }
  const shas = [...uses.keys()].sort();
  // In sha order, as the writes take payload rows; the update and the delete in two statements (a
  // row changed twice in one statement is not defined in PostgreSQL).
  const left =
    shas.length === 0
      ? []
      : await tx.many<{ sha256: string; uses: string | number }>(
          `UPDATE payloads p SET uses = p.uses - x.n
           FROM unnest($2::text[], $3::bigint[]) AS x(sha256, n)
           WHERE p.tenant_id = $1 AND p.sha256 = x.sha256 RETURNING p.sha256, p.uses`,
          [tenantId, shas, shas.map((s) => uses.get(s))],
        );
  const unused = left.filter((p) => Number(p.uses) <= 0).map((p) => p.sha256);
  const gone =
    unused.length === 0
      ? []
      : await tx.many<{ bytes: string | number }>(
          'DELETE FROM payloads WHERE tenant_id = $1 AND sha256 = ANY($2::text[]) AND uses <= 0 RETURNING bytes',
          [tenantId, unused],
        );
  for (const p of gone) bytes += Number(p.bytes);
  await tx.query('DELETE FROM events WHERE session_id = $1 AND seq <= $2', [cut.sessionId, last]);
  await tx.query('DELETE FROM event_index WHERE session_id = $1 AND seq <= $2', [cut.sessionId, last]);
  await tx.query('UPDATE tenant_log_usage SET bytes = greatest(0, bytes - $1) WHERE tenant_id = $2', [
    bytes,
    tenantId,
  ]);
  await tx.query('UPDATE sessions SET first_seq = greatest(first_seq, $1) WHERE id = $2', [
    last + 1,
    cut.sessionId,
  ]);
  return {
    events: taken,
    bytes,
    payloads: gone.length,
    sessionId: cut.sessionId,
    firstSeq: last + 1,
    reason: cut.reason,
  };
}

export const createPgLogRetentionStore = (db: PgDatabase): LogRetentionStore => ({
  tenants: () =>
    pgGuarded('read log usage', async () =>
      (
        await db.many<{ tenant_id: string; bytes: string | number }>(
          'SELECT tenant_id, bytes FROM tenant_log_usage WHERE bytes > 0 ORDER BY tenant_id',
        )
      ).map((r) => ({ tenantId: r.tenant_id, bytes: Number(r.bytes) })),
    ),
  sweepSlice: (tenantId, rule, limit) =>
    pgGuarded('remove expired events', () => db.tx((tx) => sweep(tx, tenantId, rule, limit))),
  compact: async () => ({ freed: 0, left: 0 }),
});
