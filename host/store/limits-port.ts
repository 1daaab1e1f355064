// The per-tenant limits' central side, for replicas sharing one database: egress bytes per tenant
// and hour window, which each replica leases in chunks and spends locally
// (host/egress/budget-shared.ts), and how many replicas are live, which a limit counted per replica
// divides by (./replica-share.ts: connections, request concurrency, isolate and plugin shares).
// Only the PostgreSQL backend keeps it (pg/limits.ts): the embedded libsql store serves one
// process, whose in-process counters are already the tenant's whole count, exact and free, so a
// round trip to the file would only cost. Types only.
// Invariants every backend keeps: a lease is one statement on the tenant's row, so the bytes
// granted across all replicas in one window never exceed the limit the leases were asked under;
// a grant is never more than asked.

export interface LimitStore {
  /**
   * Leases up to `bytes` of the tenant's budget of `limit` bytes in hour window `window` (hours
   * since the epoch): what the window has left, at most `bytes`; 0 when it is used up.
   */
  leaseEgressBytes(tenantId: string, window: number, bytes: number, limit: number): Promise<number>;
  /** Replicas that renewed within the last `withinMs` (at least 1: the caller runs). */
  liveReplicas(withinMs: number): Promise<number>;
}
