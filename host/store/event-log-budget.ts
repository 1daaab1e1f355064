// Large values and budgets (issue 11): which events the log admits, and what a row costs. Values
// of event data longer than `inlineBytes` are stored apart as payloads, once per tenant by SHA-256
// (payloads.ts), so the same 1 MiB argument sent a thousand times costs one copy, and a row costs
// at most about `inlineBytes`. Every tenant (the tenant of the session's agent) has a byte budget
// for its log: event rows plus the payloads they brought. The rules, decided here and checked
// at append (synchronously, once the backend's answers are loaded: event-log-load.ts). A tenant's
// budget is its `logBytes` quota (tenants.quotas, read through the backend with its usage on its
// first append), else the service's (DSH_TENANT_LOG_BYTES). The operator's change is seen at once
// in the process that made it (setBudget); other processes read the quota again on the tenant's
// first append past BUDGET_REFRESH_MS after they last read it, so they follow within that time.
// - An event that fits in what is left of its tenant's budget is stored whole.
// - An event that does not fit is refused with STORE_BUDGET_EXCEEDED, so the pipeline does not
//   run a call it cannot record whole: every call that ran has its arguments in the log.
// - Except events that settle something already admitted (SETTLING_TYPES: a call's result, a
//   request's end; and an allowed egress's audit, written when it closes, the egress having been
//   allowed only while the log `admits` its session): never refused, so the timeline never holds
//   a call without its end, nor an egress without its record. One that does not fit keeps its
//   small facts (type, ids, name, ok, sizes) and the sha256 and size of every large value; the
//   values it would newly add are not kept (PayloadRef.dropped). The overshoot is bounded by those
//   small forms of the calls admitted before the budget ran out.
// Payloads already stored cost nothing: an event that only references them always fits as well as
// its own row does. The audit log never silently loses that a call happened.
// Usage is counted at append (queued rows included) and persisted by the backend in the same write;
// several processes sharing one database each enforce it against what they last read.
import { SandboxError } from '../errors.ts';
import { answer, gather, Loading, loaded } from './event-log-load.ts';
import type { EventRow, QueuedRow } from './event-log-port.ts';
import { NO_BLOBS, shape } from './event-log-rows.ts';
import { type Budget, blobKey, type LogState, type SessionState, sessionOf } from './event-log-state.ts';
import type { SessionEventInput, TenantLogUsage } from './types.ts';

export const DEFAULT_LOG_BUDGET_BYTES = 512 * 1024 * 1024;
/** Events that end something already admitted: kept (small) even past the budget. */
export const SETTLING_TYPES: ReadonlySet<string> = new Set([
  'tool.result',
  'request.answered',
  'request.expired',
  'request.cancelled',
  // how a client's action on the sandbox ended (host/api/audit.ts)
  'client.result',
]);
/** What `admits` asks room for by default: an audit event's row with its envelope. */
const ADMIT_BYTES = 1024;
/** What a row costs beyond its data and refs (key, type, ids, columns): an estimate, the same everywhere. */
const ROW_OVERHEAD = 48;

/**
 * Whether `input` ends something already admitted: a SETTLING_TYPES event, or the audit of an
 * egress connection or request that was allowed (host/egress/audit.ts: written when it closes, and
 * allowed only while the log `admits` its session, so it is never lost to the budget).
 */
function settles(input: SessionEventInput): boolean {
  return (
    SETTLING_TYPES.has(input.type) ||
    (input.type === 'egress' &&
      typeof input.data === 'object' &&
      input.data !== null &&
      !Array.isArray(input.data) &&
      input.data.decision === 'allow')
  );
}

/** What a row counts against its tenant's budget, its payloads apart (migrations.ts counts alike). */
function rowBytes(row: EventRow): number {
  return (
    ROW_OVERHEAD +
    Buffer.byteLength(row.data) +
    (row.refs?.length ?? 0) +
    row.type.length +
    (row.callId?.length ?? 0) +
    (row.parentCallId?.length ?? 0)
  );
}

/** How long a tenant's budget read from the store holds before its next append reads it again. */
export const BUDGET_REFRESH_MS = 5000;

/** The tenant's own budget (its `logBytes` quota) from the backend: undefined when it has none. */
const quotaOf = (s: LogState, tenantId: string): number | undefined =>
  answer(s, `quota\0${tenantId}`, () => s.backend.quotaOf?.(tenantId));

/** The tenant's budget, its usage and quota loaded from the backend (in one round) on its first append. */
export function budgetOf(s: LogState, session: SessionState): Budget {
  const tenantId = session.tenantId;
  let entry = session.budget ?? s.budgets.get(tenantId);
  if (entry === undefined) {
    const loads: Promise<void>[] = [];
    const used = gather(loads, () => answer(s, `usage\0${tenantId}`, () => s.backend.usage(tenantId)));
    const quota = gather(loads, () => quotaOf(s, tenantId));
    loaded(loads);
    entry = { tenantId, used: used ?? 0, max: quota ?? s.budget, readAt: s.now(), dropped: 0, refused: 0 };
    s.budgets.set(tenantId, entry);
  } else if (s.now() - entry.readAt >= BUDGET_REFRESH_MS) {
    // Another process's operator may have changed it: read again (setting it twice is harmless
    // when the operation runs again after a later load).
    entry.max = quotaOf(s, tenantId) ?? s.budget;
    entry.readAt = s.now();
  }
  session.budget = entry;
  return entry;
}

/** The operator set the tenant's budget in this process (undefined: the service's): effective at once. */
export function setBudget(s: LogState, tenantId: string, bytes: number | undefined): void {
  const entry = s.budgets.get(tenantId);
  if (entry === undefined) return; // read with its usage on its first append
  entry.max = bytes ?? s.budget;
  entry.readAt = s.now();
}

function refuse(tenant: Budget, bytes: number, adding: number): SandboxError {
  const { tenantId, max: budget } = tenant;
  tenant.refused++;
  return new SandboxError(
    'STORE_BUDGET_EXCEEDED',
    `This tenant's event log holds ${bytes} of its ${budget} bytes; ` +
      (adding === 0 ? 'it is full' : `an event of ${adding} bytes does not fit`) +
      ", so the call was not run. An operator can raise this tenant's budget (PUT /v1/tenants/:id/limits, logBytes) or every tenant's (DSH_TENANT_LOG_BYTES).",
    { data: { tenantId, bytes, budget } },
  );
}

/**
 * Shapes one event for the queue under its tenant's budget (see the header), given what this
 * append already adds to that budget (`pending`) and the payloads it already adds (`adding`,
 * into which this event's new ones go). Its seq and time are set when the append is admitted whole.
 */
export function admit(
  s: LogState,
  input: SessionEventInput,
  session: SessionState,
  pending: number,
  adding: Set<string> | undefined,
): QueuedRow {
  const tenant = budgetOf(s, session);
  const tenantId = session.tenantId;
  const before = tenant.used + pending;
  const settling = settles(input);
  // Spent budgets refuse before any serializing or hashing.
  if (!settling && before >= tenant.max) throw refuse(tenant, before, 0);
  const split = shape(input, s.inlineBytes);
  const simple = typeof split === 'string';
  // Every payload's "stored already?" asked together (an asynchronous backend answers them in one round).
  const loads: Promise<void>[] = [];
  let blobs = simple
    ? NO_BLOBS
    : split.blobs.filter((b) => {
        const key = blobKey(tenantId, b.sha256);
        return (
          !adding?.has(key) &&
          !s.queuedBlobs.has(key) &&
          gather(loads, () => answer(s, `has\0${key}`, () => s.backend.hasBlob(tenantId, b.sha256))) === false
        );
      });
  loaded(loads);
  const row: QueuedRow = {
    sessionId: input.sessionId,
    seq: 0,
    at: 0,
    type: input.type,
    surface: input.surface,
    callId: input.callId,
    parentCallId: input.parentCallId,
    data: simple ? split : split.json,
    refs: simple || split.refs.length === 0 ? undefined : JSON.stringify(split.refs),
    tenantId,
    bytes: 0,
    blobs,
  };
  let bytes = rowBytes(row);
  for (const b of blobs) bytes += b.bytes;
  if (before + bytes > tenant.max) {
    if (!settling) throw refuse(tenant, before, bytes);
    if (!simple && blobs.length > 0) {
      const lost = new Set(blobs.map((b) => b.sha256));
      const refs = split.refs.map((r) => (lost.has(r.sha256) ? { ...r, dropped: true as const } : r));
      row.refs = JSON.stringify(refs);
      tenant.dropped += lost.size;
      blobs = NO_BLOBS;
      row.blobs = blobs;
      bytes = rowBytes(row);
    }
  }
  row.bytes = bytes;
  for (const b of blobs) adding?.add(blobKey(tenantId, b.sha256));
  return row;
}

/** Whether the session's tenant has `bytes` left (an egress asks before it is allowed). */
export function admits(s: LogState, sessionId: string, bytes = ADMIT_BYTES): boolean {
  if (s.closed) return false;
  try {
    const tenant = budgetOf(s, sessionOf(s, sessionId));
    return tenant.used + bytes <= tenant.max;
  } catch (error) {
    if (error instanceof Loading) throw error;
    return false;
  }
}

/**
 * Every tenant's usage: stored figures, replaced by this process's count where it has one; the
 * budget of a tenant that did not append since open is the service's (its quota is read at append).
 */
export function usageOf(s: LogState): TenantLogUsage[] {
  const all = new Map<string, number>();
  for (const { tenantId, bytes } of answer(s, 'usageAll', () => s.backend.usageAll()))
    all.set(tenantId, bytes);
  for (const { tenantId, used } of s.budgets.values()) all.set(tenantId, used);
  return [...all].map(([tenantId, bytes]) => usageEntry(s, tenantId, bytes));
}

/**
 * One tenant's entry of usageOf: this process's count when it has one (no read), else its one
 * stored row (the backend's usage(tenantId)), never every tenant's.
 */
export function tenantUsageOf(s: LogState, tenantId: string): TenantLogUsage {
  const bytes =
    s.budgets.get(tenantId)?.used ?? answer(s, `usage\0${tenantId}`, () => s.backend.usage(tenantId));
  return usageEntry(s, tenantId, bytes);
}

function usageEntry(s: LogState, tenantId: string, bytes: number): TenantLogUsage {
  const budget = s.budgets.get(tenantId);
  return {
    tenantId,
    bytes,
    budget: budget?.max ?? s.budget,
    dropped: budget?.dropped ?? 0,
    refused: budget?.refused ?? 0,
  };
}
