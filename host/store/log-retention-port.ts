// The durable log's retention port (LogRetentionStore) and what both backends decide alike: which
// session a slice cuts, and how far. host/tenants/retention.ts runs it in bounded slices; the
// libsql backend is log-retention.ts, the PostgreSQL one pg/log-retention.ts.
// Invariants (every backend): a slice removes a PREFIX of one session's events (seq <= K, in one
// transaction with everything that follows from it), so a session's kept events stay gap-free from
// `sessions.first_seq` (raised to K + 1 in that transaction); the slice takes its index entries,
// the payloads whose last use went with it (`payloads.uses`, migration 24) and the bytes it freed
// from `tenant_log_usage`; only the named tenant's sessions are touched; a session's last_seq is
// never lowered, so appends continue after it. `sessions.open_calls` (calls ever stored minus
// results) is left as it is: removing a settled call and its result changes no open count, and a
// call removed unsettled at worst makes the crash repair read that session and find nothing to do.

/** What may go from one tenant's log (host/tenants/retention.ts derives it from its settings). */
export interface RetentionRule {
  /** Events appended before this time (ms since the epoch) go. Unset: no age limit. */
  before?: number;
  /** The log is cut, oldest events first (across sessions), until it holds at most this many bytes. */
  maxBytes?: number;
  /** Every event of an agent deleted before this time goes. Unset: deleted agents' logs stay. */
  deletedBefore?: number;
}

/** Why a slice removed what it did. */
export type SliceReason =
  /** the session's agent was deleted more than the grace period ago */
  | 'deleted'
  /** its events were older than the tenant's retention age */
  | 'age'
  /** the tenant's log held more bytes than its retention allows */
  | 'bytes';

/** What one slice removed; `events` 0: nothing of the tenant may go under this rule now. */
export interface SweptSlice {
  events: number;
  /** Log bytes given back to the tenant's usage (event rows and the payloads that went). */
  bytes: number;
  payloads: number;
  sessionId?: string;
  /** The session's first kept seq now. */
  firstSeq?: number;
  reason?: SliceReason;
}

export interface LogRetentionStore {
  /** Every tenant that holds log bytes, with how many. */
  tenants(): Promise<{ tenantId: string; bytes: number }[]>;
  /** Removes at most `limit` events of the tenant that the rule lets go (see the header), in one transaction. */
  sweepSlice(tenantId: string, rule: RetentionRule, limit: number): Promise<SweptSlice>;
  /**
   * Gives at most `pages` free pages of the database file back to the file system (libsql with
   * auto_vacuum=INCREMENTAL; none when `pages` < 1); `left`: free pages still in the file. PostgreSQL: nothing to do
   * (its autovacuum makes the space reusable), both 0.
   */
  compact(pages: number): Promise<{ freed: number; left: number }>;
}

/** A session's oldest kept event: where the next slice may start. */
export interface SessionHead {
  id: string;
  firstAt: number;
}

/** One event as a slice weighs it: `bytes` as the budget counted it at append (event-log-budget.ts rowBytes). */
export interface WeighedRow {
  seq: number;
  at: number;
  bytes: number;
  refs: string | null;
}

/** The cut a slice makes in one session: what removes up to `until` (inclusive) of its oldest rows. */
export interface Cut {
  sessionId: string;
  reason: SliceReason;
  /** Rows are taken while `at < before` … */
  before: number;
  /** … or while `at <= upTo` and fewer than `needBytes` were taken (the byte limit). */
  upTo: number;
  needBytes: number;
}

/**
 * The session a slice cuts next by age or bytes: the one whose kept log starts earliest (`heads`,
 * oldest first, at most two), so that a byte cut removes the tenant's oldest events first and the
 * age cut reaches every session in turn. Undefined: nothing to cut.
 */
export function nextCut(heads: readonly SessionHead[], rule: RetentionRule, usage: number): Cut | undefined {
  const oldest = heads[0];
  if (oldest === undefined) return undefined;
  const byAge = rule.before !== undefined && oldest.firstAt < rule.before;
  const needBytes = rule.maxBytes !== undefined && usage > rule.maxBytes ? usage - rule.maxBytes : 0;
  if (!byAge && needBytes === 0) return undefined;
  return {
    sessionId: oldest.id,
    reason: needBytes > 0 ? 'bytes' : 'age',
    before: byAge ? rule.before! : Number.NEGATIVE_INFINITY,
    // Not past the next session's first event: that one is older than what follows here.
    upTo: needBytes > 0 ? (heads[1]?.firstAt ?? Number.POSITIVE_INFINITY) : Number.NEGATIVE_INFINITY,
    needBytes,
  };
}

/** How many of `rows` (a session's oldest, in seq order) the cut removes: always a prefix. */
export function prefixOf(rows: readonly WeighedRow[], cut: Cut): number {
  let taken = 0;
  let bytes = 0;
  for (const row of rows) {
    const aged = row.at < cut.before;
    const over = bytes < cut.needBytes && (row.at <= cut.upTo || taken === 0);
    if (!aged && !over) break;
    taken++;
    bytes += row.bytes;
  }
  return taken;
}
