// The EventLog behaviour shared by every backend: per-session seq assigned synchronously at
// append (gap-free, strictly increasing from 1), rows queued and written by ONE writer path in one
// batch per tick, readers that see queued rows merged after the durable ones, and subscribers told
// only after their events are durable (so a client never sees a seq a crash could hand out again).
// Invariants: one process writes a given session; rows are written in append order; a failed
// batch stays queued (flush() rejects, the next tick retries) instead of being dropped.
// With a writer thread (event-writer.ts) the batch is handed over instead of written here: one
// write in flight, everything appended meanwhile goes into the next one (group commit), and the
// rows in flight count as queued for readers until the thread says they are stored.
//
// Large values and budgets (issue 11). Values of event data longer than `inlineBytes` are stored
// apart as payloads, once per tenant by SHA-256 (payloads.ts), so the same 1 MiB argument sent a
// thousand times costs one copy, and a row costs at most about `inlineBytes`. Every tenant (the
// tenant of the session's agent) has a byte budget for its log: event rows plus the payloads they
// brought. The rules, decided here and checked synchronously at append:
// - An event that fits in what is left of its tenant's budget is stored whole.
// - An event that does not fit is refused with STORE_BUDGET_EXCEEDED, so the pipeline does not
//   run a call it cannot record whole: every call that ran has its arguments in the log.
// - Except events that settle something already admitted (SETTLING_TYPES: a call's result, a
//   request's end; and an allowed egress's audit, written when it closes, the egress having been
//   allowed only while the log `admits` its session): never refused, so the timeline never holds
//   a call without its end, nor an egress without its record. One that does not fit keeps its small facts (type, ids, name, ok, sizes) and the sha256 and size of
//   every large value; the values it would newly add are not kept (PayloadRef.dropped). The
//   overshoot is bounded by those small forms of the calls admitted before the budget ran out.
// Payloads already stored cost nothing: an event that only references them always fits as well as
// its own row does. The audit log never silently loses that a call happened.
// Usage is counted at append (queued rows included) and persisted by the backend in the same write;
// several processes sharing one database each enforce it against what they last read.
import { SandboxError } from '../errors.ts';
import {
  DEFAULT_INLINE_BYTES,
  mayExceed,
  type PayloadBlob,
  payloadText,
  resolveData,
  type SplitData,
  splitValue,
  topRefs,
} from './payloads.ts';
import type {
  EventLog,
  EventPayloads,
  EventQuery,
  EventSurface,
  PayloadRef,
  SessionEvent,
  SessionEventInput,
  TenantLogUsage,
} from './types.ts';

/** An event as stored: data already serialized (markers in place of payloads), so later mutation cannot change it. */
export interface EventRow {
  sessionId: string;
  seq: number;
  type: string;
  surface: EventSurface;
  callId: string | undefined;
  parentCallId: string | undefined;
  data: string;
  /** JSON array of PayloadRef, children first; undefined when nothing moved. */
  refs: string | undefined;
  at: number;
}

/** A row on its way to the backend, with what its write must also do. */
export interface QueuedRow extends EventRow {
  tenantId: string;
  /** What the row adds to its tenant's usage (payloads included). */
  bytes: number;
  /** Payloads this row stores first (not yet stored for the tenant). */
  blobs: readonly PayloadBlob[];
}

/**
 * Where rows go. All methods are synchronous; `write` is atomic (all rows, their payloads and the
 * usage they add, or nothing) and may raise the seqs of a session's rows (keeping their order) when
 * another writer got there first.
 */
export interface EventBackend {
  /** The highest seq stored for the session, 0 when none. Called once per session. */
  lastSeq(sessionId: string): number;
  /** The tenant whose budget the session's events count against ('' when none is known). */
  tenantOf(sessionId: string): string;
  /** Stored log bytes of a tenant. Called once per tenant. */
  usage(tenantId: string): number;
  /** Stored log bytes of every tenant. */
  usageAll(): { tenantId: string; bytes: number }[];
  readBlob(tenantId: string, sha256: string): string | undefined;
  hasBlob(tenantId: string, sha256: string): boolean;
  write(rows: QueuedRow[]): void;
  read(sessionId: string, afterSeq: number, limit: number): EventRow[];
}

export interface EventLogOptions {
  /** Clock for `at`. Default Date.now. */
  now?: () => number;
  /** Told about background write failures (the rows stay queued and are retried). */
  onError?: (error: unknown) => void;
  /**
   * How long appends may wait to be written together. 0 (the default) writes at the next
   * setImmediate; a few ms coalesces calls that arrive in different ticks into one transaction.
   * flush() and close() always write at once.
   */
  batchWindowMs?: number;
  /** Log bytes each tenant may hold (events plus payloads). Default DEFAULT_LOG_BUDGET_BYTES (512 MiB). */
  budgetBytes?: number;
  /** Values of event data longer than this (JSON characters) are stored once, apart. Default 16 KiB. */
  inlineBytes?: number;
  /** Overrides the backend's session → tenant mapping (tests, stores without agents). */
  tenantOf?: (sessionId: string) => string;
}

/**
 * Writes rows off the caller's thread (event-writer.ts), one write at a time, in order. The core
 * falls back to `backend.write` once a write comes back `lost`.
 */
export interface AsyncEventWriter {
  /**
   * `done` is called once: how many rows (from the first) are stored, their seqs when the backend
   * renumbered them (undefined: as given), the error that stopped the rest, and `lost` when the
   * thread ended (whether the rest was stored is unknown).
   */
  write(
    rows: QueuedRow[],
    done: (result: { stored: number; seqs?: number[]; error?: unknown; lost?: boolean }) => void,
  ): void;
  /** Blocks the calling thread until the write in flight (if any) has called its `done`. */
  waitSync(): void;
  /** Ends the thread (after waitSync). */
  close(): void;
}

export interface ClosableEventLog extends EventLog, EventPayloads {
  /** Writes what is queued and stops the background writer. */
  close(): void;
}

const SURFACES: ReadonlySet<string> = new Set<EventSurface>(['current', 'log-only']);
export const DEFAULT_EVENT_LIMIT = 500;
export const MAX_EVENT_LIMIT = 5000;
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
/**
 * Whether `input` ends something already admitted: a SETTLING_TYPES event, or the audit of an
 * egress connection or request that was allowed (host/egress/audit.ts: written when it closes, and
 * allowed only while the log `admits` its session, so it is never lost to the budget).
 */
const settles = (input: SessionEventInput): boolean =>
  SETTLING_TYPES.has(input.type) ||
  (input.type === 'egress' &&
    typeof input.data === 'object' &&
    input.data !== null &&
    !Array.isArray(input.data) &&
    input.data.decision === 'allow');
/** What `admits` asks room for by default: an audit event's row with its envelope. */
const ADMIT_BYTES = 1024;
/** A tenant's log budget as this process counts it (see the header). */
interface Budget {
  tenantId: string;
  /** Log bytes stored plus queued: loaded from the backend on the tenant's first append. */
  used: number;
  dropped: number;
  refused: number;
}

/** What appending to a session needs, kept per session. */
interface SessionState {
  tenantId: string;
  /** Its tenant's, once the session appended. */
  budget: Budget | undefined;
  /** The last seq given (or stored, once the backend renumbered); -1 until read at its first append. */
  seq: number;
}

/** Fixed part of an event's JSON: `{"seq":…,"at":…,"type":"","surface":"log-only","callId":"",…}`. */
const EVENT_ENVELOPE = 128;
/** What a row costs beyond its data and refs (key, type, ids, columns): an estimate, the same everywhere. */
const ROW_OVERHEAD = 48;

const rowBytes = (row: EventRow): number =>
  ROW_OVERHEAD +
  Buffer.byteLength(row.data) +
  (row.refs?.length ?? 0) +
  row.type.length +
  (row.callId?.length ?? 0) +
  (row.parentCallId?.length ?? 0);

const parseRefs = (row: EventRow): PayloadRef[] =>
  row.refs === undefined ? [] : (JSON.parse(row.refs) as PayloadRef[]);

const baseEvent = (row: EventRow, data: SessionEvent['data']): SessionEvent => {
  const event: SessionEvent = {
    sessionId: row.sessionId,
    seq: row.seq,
    type: row.type,
    surface: row.surface,
    data,
    at: row.at,
  };
  if (row.callId !== undefined) event.callId = row.callId;
  if (row.parentCallId !== undefined) event.parentCallId = row.parentCallId;
  return event;
};

/** A stored row as an event with its markers and their list (no payload is read). */
export const toEvent = (row: EventRow): SessionEvent => {
  const event = baseEvent(row, JSON.parse(row.data));
  const refs = topRefs(parseRefs(row));
  if (refs.length > 0) event.payloads = refs;
  return event;
};

const validate = (input: SessionEventInput): void => {
  if (typeof input.sessionId !== 'string' || input.sessionId === '') {
    throw new SandboxError('STORE_FAILED', 'event needs a non-empty sessionId');
  }
  if (typeof input.type !== 'string' || input.type === '') {
    throw new SandboxError('STORE_FAILED', 'event needs a non-empty type', {
      data: { sessionId: input.sessionId },
    });
  }
  if (!SURFACES.has(input.surface)) {
    throw new SandboxError(
      'STORE_FAILED',
      `event surface must be 'current' or 'log-only', got ${input.surface}`,
    );
  }
};

/** What rows with no payloads share (never mutated). */
const NO_BLOBS: readonly PayloadBlob[] = Object.freeze([]);

/**
 * The data's JSON text with its large values moved out (payloads.ts): a string when nothing moved
 * (the common case, no object built around it).
 */
const shape = (input: SessionEventInput, inlineBytes: number): string | SplitData => {
  try {
    if (!mayExceed(input.data, inlineBytes)) {
      const json = JSON.stringify(input.data) ?? 'null';
      if (json.length <= inlineBytes) return json;
    }
    return splitValue(input.data, inlineBytes);
  } catch (cause) {
    throw new SandboxError('STORE_FAILED', `event ${input.type} data is not JSON-serializable`, { cause });
  }
};

export const createEventLog = (
  backend: EventBackend,
  options: EventLogOptions = {},
  threadWriter?: AsyncEventWriter,
): ClosableEventLog => {
  const now = options.now ?? Date.now;
  const batchWindowMs = options.batchWindowMs ?? 0;
  const budget = options.budgetBytes ?? DEFAULT_LOG_BUDGET_BYTES;
  const inlineBytes = options.inlineBytes ?? DEFAULT_INLINE_BYTES;
  /** Per session: its tenant, its budget and its last seq, loaded as first needed. */
  const sessions = new Map<string, SessionState>();
  /** Per tenant that appended since open: log bytes stored plus queued, and what was dropped or refused. */
  const budgets = new Map<string, Budget>();
  /** Payloads queued but not yet written, by `${tenant}\0${sha256}`. */
  const queuedBlobs = new Map<string, string>();
  const listeners = new Map<string, Set<(event: SessionEvent) => void>>();
  let queue: QueuedRow[] = [];
  /** Rows the writer thread has and has not answered for yet (readers still see them). */
  let inFlight: QueuedRow[] = [];
  /** The writer thread while it works; undefined writes on the caller's thread. */
  let writer = threadWriter;
  /** Rows appended and rows known stored, since open: flush() waits for the first to reach the second. */
  let appended = 0;
  let stored = 0;
  const answerWaiters = new Set<{ resolve: () => void; reject: (error: unknown) => void }>();
  /** Cancels the pending background write, when one is scheduled. */
  let scheduled: (() => void) | undefined;
  let failures = 0;
  let closed = false;

  const sessionOf = (sessionId: string): SessionState => {
    let session = sessions.get(sessionId);
    if (session === undefined) {
      const tenantId = options.tenantOf?.(sessionId) ?? backend.tenantOf(sessionId);
      session = { tenantId, budget: undefined, seq: -1 };
      sessions.set(sessionId, session);
    }
    return session;
  };
  const tenantOf = (sessionId: string): string => sessionOf(sessionId).tenantId;
  /** The tenant's budget, its usage loaded from the backend on its first append. */
  const budgetOf = (session: SessionState): Budget => {
    if (session.budget !== undefined) return session.budget;
    const tenantId = session.tenantId;
    let entry = budgets.get(tenantId);
    if (entry === undefined) {
      entry = { tenantId, used: backend.usage(tenantId), dropped: 0, refused: 0 };
      budgets.set(tenantId, entry);
    }
    session.budget = entry;
    return entry;
  };
  const blobKey = (tenant: string, sha256: string) => `${tenant}\0${sha256}`;
  const readBlob = (tenant: string, sha256: string): string | undefined =>
    queuedBlobs.get(blobKey(tenant, sha256)) ?? backend.readBlob(tenant, sha256);

  const notify = (rows: QueuedRow[]) => {
    for (const row of rows) {
      const set = listeners.get(row.sessionId);
      if (set === undefined) continue;
      // Subscribers see what `payloads: 'refs'` readers see: large values stay markers.
      const event = toEvent(row);
      for (const listener of [...set]) {
        try {
          listener(event);
        } catch (error) {
          options.onError?.(error);
        }
      }
    }
  };

  /** What follows a stored batch: seqs followed, payloads no longer queued, subscribers told. */
  const committed = (batch: QueuedRow[]) => {
    stored += batch.length;
    let session: SessionState | undefined;
    let sessionId: string | undefined;
    let blobs = false;
    for (const row of batch) {
      // The backend may have renumbered rows after another process's writes: follow it.
      if (row.sessionId !== sessionId) {
        sessionId = row.sessionId;
        session = sessions.get(sessionId);
      }
      if (session !== undefined && row.seq > session.seq) session.seq = row.seq;
      if (row.blobs.length === 0) continue;
      blobs = true;
      for (const blob of row.blobs) queuedBlobs.delete(blobKey(row.tenantId, blob.sha256));
    }
    if (listeners.size > 0) notify(batch);
    if (blobs) for (const row of batch) row.blobs = NO_BLOBS;
  };

  /** The one writer path: takes the whole queue, writes it atomically (or hands it to the thread), then notifies. */
  const drain = () => {
    scheduled?.();
    scheduled = undefined;
    if (queue.length === 0) return;
    if (writer !== undefined) return handOver(writer);
    const batch = queue;
    queue = [];
    try {
      backend.write(batch);
    } catch (error) {
      queue = batch.concat(queue);
      failures++;
      throw error;
    }
    failures = 0;
    committed(batch);
  };

  /** Gives the queue to the writer thread unless a write is in flight (its answer sends the rest). */
  const handOver = (thread: AsyncEventWriter) => {
    if (inFlight.length > 0 || queue.length === 0) return;
    const batch = queue;
    queue = [];
    inFlight = batch;
    thread.write(batch, (answer) => {
      inFlight = [];
      // The common answer: everything stored as numbered, no copies.
      const whole = answer.stored === batch.length;
      const done = whole ? batch : batch.slice(0, answer.stored);
      const { seqs } = answer;
      if (seqs !== undefined)
        done.forEach((row, i) => {
          row.seq = seqs[i] ?? row.seq;
        });
      let rest = whole ? [] : batch.slice(answer.stored);
      if (answer.lost) {
        // The thread ended: what it stored is unknown, so use the stored seqs (one writer per session).
        writer = undefined;
        const kept = rest.filter((row) => row.seq > backend.lastSeq(row.sessionId));
        done.push(...rest.filter((row) => !kept.includes(row)));
        rest = kept;
      }
      if (done.length > 0) committed(done);
      const waiters = [...answerWaiters];
      answerWaiters.clear();
      if (answer.error === undefined) {
        failures = 0;
        for (const w of waiters) w.resolve();
        if (queue.length > 0 && !closed) schedule();
        return;
      }
      queue = rest.concat(queue);
      options.onError?.(answer.error);
      if (answer.lost) {
        // Not a failed write: the rest is written here from now on.
        for (const w of waiters) w.resolve();
        if (!closed) schedule();
        return;
      }
      failures++;
      for (const w of waiters) w.reject(answer.error);
      if (!closed) schedule();
    });
  };

  /** Resolves at the writer thread's next answer, rejecting when that write failed. */
  const nextAnswer = () =>
    new Promise<void>((resolve, reject) => {
      answerWaiters.add({ resolve, reject });
    });

  const schedule = () => {
    if (scheduled !== undefined || closed) return;
    const run = () => {
      scheduled = undefined;
      try {
        drain();
      } catch (error) {
        options.onError?.(error);
        if (!closed) later(run, Math.min(5000, 50 * 2 ** Math.min(failures, 7)));
      }
    };
    if (failures > 0) later(run, 50);
    else if (batchWindowMs > 0)
      later(run, batchWindowMs, true); // ref'd: queued events keep the process up
    else {
      const handle = setImmediate(run);
      scheduled = () => clearImmediate(handle);
    }
  };

  /** Retries are unref'd so a store that keeps failing never holds the process open. */
  const later = (run: () => void, ms: number, ref = false) => {
    const handle = setTimeout(run, ms);
    if (!ref) handle.unref();
    scheduled = () => clearTimeout(handle);
  };

  const refuse = (tenant: Budget, bytes: number, adding: number): SandboxError => {
    const { tenantId } = tenant;
    tenant.refused++;
    return new SandboxError(
      'STORE_BUDGET_EXCEEDED',
      `This tenant's event log holds ${bytes} of its ${budget} bytes; ` +
        (adding === 0 ? 'it is full' : `an event of ${adding} bytes does not fit`) +
        ', so the call was not run. An operator can raise the budget (DSH_TENANT_LOG_BYTES).',
      { data: { tenantId, bytes, budget } },
    );
  };

  /**
   * Shapes one event for the queue under its tenant's budget (see the header), given what this
   * append already adds to that budget (`pending`) and the payloads it already adds (`adding`,
   * into which this event's new ones go).
   */
  const admit = (
    input: SessionEventInput,
    session: SessionState,
    pending: number,
    adding: Set<string> | undefined,
  ): QueuedRow => {
    const tenant = budgetOf(session);
    const tenantId = session.tenantId;
    const before = tenant.used + pending;
    const settling = settles(input);
    // Spent budgets refuse before any serializing or hashing.
    if (!settling && before >= budget) throw refuse(tenant, before, 0);
    const split = shape(input, inlineBytes);
    const simple = typeof split === 'string';
    let blobs = simple
      ? NO_BLOBS
      : split.blobs.filter((b) => {
          const key = blobKey(tenantId, b.sha256);
          return !adding?.has(key) && !queuedBlobs.has(key) && !backend.hasBlob(tenantId, b.sha256);
        });
    // seq and at are set when the append is admitted whole.
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
    if (before + bytes > budget) {
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
  };

  /** Queues an admitted row (its session's seq loaded) with its seq and time; the event appended. */
  const enqueue = (
    input: SessionEventInput,
    row: QueuedRow,
    session: SessionState,
    at: number,
  ): SessionEvent => {
    row.seq = ++session.seq;
    row.at = at;
    for (const blob of row.blobs) queuedBlobs.set(blobKey(row.tenantId, blob.sha256), blob.json);
    queue.push(row);
    appended++;
    return { ...input, seq: row.seq, at };
  };

  /** A session's last seq, read from the backend before its first append. */
  const loadSeq = (sessionId: string, session: SessionState) => {
    if (session.seq < 0) session.seq = backend.lastSeq(sessionId);
  };

  /** One event (what the tool pipeline appends): the general path without its per-append maps. */
  const appendOne = (input: SessionEventInput): SessionEvent => {
    validate(input);
    const session = sessionOf(input.sessionId);
    const row = admit(input, session, 0, undefined);
    loadSeq(input.sessionId, session);
    (session.budget as Budget).used += row.bytes;
    const event = enqueue(input, row, session, now());
    schedule();
    return event;
  };

  /** About the length of the event's JSON as the API shows it (envelope, data and payload list). */
  const sizeOf = (row: EventRow, refs: PayloadRef[], inline: boolean): number =>
    EVENT_ENVELOPE +
    row.type.length +
    (row.callId?.length ?? 0) +
    (row.parentCallId?.length ?? 0) +
    row.data.length +
    (inline
      ? refs.reduce((n, r) => n + (r.dropped ? 0 : r.bytes), 0)
      : refs.length === 0
        ? 0
        : JSON.stringify(refs).length + 14);

  return {
    append(inputs) {
      if (closed) throw new SandboxError('SHUTTING_DOWN', 'the event log is closed');
      if (inputs.length === 1) return [appendOne(inputs[0] as SessionEventInput)];
      // Check, serialize and admit everything first so a bad or refused event rejects the whole
      // append before any seq or byte is used (and a refused one is never serialized).
      const pending = new Map<Budget, number>();
      const adding = new Set<string>();
      const states: SessionState[] = [];
      const rows = inputs.map((input) => {
        validate(input);
        const session = sessionOf(input.sessionId);
        const tenant = budgetOf(session);
        const row = admit(input, session, pending.get(tenant) ?? 0, adding);
        pending.set(tenant, (pending.get(tenant) ?? 0) + row.bytes);
        states.push(session);
        return row;
      });
      for (const [i, input] of inputs.entries()) loadSeq(input.sessionId, states[i] as SessionState);
      for (const [tenant, bytes] of pending) tenant.used += bytes;
      const at = now();
      const events = inputs.map((input, i) =>
        enqueue(input, rows[i] as QueuedRow, states[i] as SessionState, at),
      );
      if (events.length > 0) schedule();
      return events;
    },

    admits(sessionId, bytes = ADMIT_BYTES) {
      if (closed) return false;
      try {
        return budgetOf(sessionOf(sessionId)).used + bytes <= budget;
      } catch {
        return false;
      }
    },

    async flush() {
      // Rows are stored in append order: everything appended so far is durable when `stored` gets there.
      const target = appended;
      while (stored < target) {
        drain();
        if (inFlight.length > 0) await nextAnswer();
      }
    },

    list(sessionId, query: EventQuery = {}) {
      const afterSeq = Math.max(0, Math.trunc(query.afterSeq ?? 0));
      const limit = Math.min(MAX_EVENT_LIMIT, Math.max(0, Math.trunc(query.limit ?? DEFAULT_EVENT_LIMIT)));
      const maxBytes = query.maxBytes ?? Number.POSITIVE_INFINITY;
      const inline = query.payloads !== 'refs';
      if (limit === 0) return [];
      const rows = backend.read(sessionId, afterSeq, limit);
      // Queued rows always have higher seqs than stored ones: append them after. Rows in flight
      // may be stored by now: those past the last stored one are not.
      let after = rows.at(-1)?.seq ?? afterSeq;
      for (const row of inFlight.length === 0 ? queue : [...inFlight, ...queue]) {
        if (rows.length >= limit) break;
        if (row.sessionId === sessionId && row.seq > after) {
          rows.push(row);
          after = row.seq;
        }
      }
      const events: SessionEvent[] = [];
      let total = 0;
      for (const row of rows) {
        const refs = parseRefs(row);
        const top = topRefs(refs);
        const size = sizeOf(row, top, inline);
        if (events.length > 0 && total + size > maxBytes) break;
        total += size;
        if (!inline || refs.length === 0) events.push(toEvent(row));
        else {
          const tenant = tenantOf(sessionId);
          events.push(
            baseEvent(
              row,
              resolveData(row.data, refs, (sha) => readBlob(tenant, sha)),
            ),
          );
        }
      }
      return events;
    },

    payload(sessionId, seq, pointer) {
      const row =
        queue.find((r) => r.sessionId === sessionId && r.seq === seq) ??
        inFlight.find((r) => r.sessionId === sessionId && r.seq === seq) ??
        backend.read(sessionId, Math.max(0, seq - 1), 1).find((r) => r.seq === seq);
      if (row === undefined)
        throw new SandboxError('NOT_FOUND', `No event ${seq} in this log.`, { data: { seq } });
      const tenant = tenantOf(sessionId);
      return payloadText(parseRefs(row), pointer, (sha) => readBlob(tenant, sha));
    },

    usage() {
      const all = new Map<string, number>();
      for (const { tenantId, bytes } of backend.usageAll()) all.set(tenantId, bytes);
      for (const { tenantId, used } of budgets.values()) all.set(tenantId, used);
      return [...all].map(
        ([tenantId, bytes]): TenantLogUsage => ({
          tenantId,
          bytes,
          budget,
          dropped: budgets.get(tenantId)?.dropped ?? 0,
          refused: budgets.get(tenantId)?.refused ?? 0,
        }),
      );
    },

    subscribe(sessionId, listener) {
      const set = listeners.get(sessionId) ?? new Set();
      listeners.set(sessionId, set);
      set.add(listener);
      return () => {
        set.delete(listener);
        if (set.size === 0 && listeners.get(sessionId) === set) listeners.delete(sessionId);
      };
    },

    close() {
      if (closed) return;
      try {
        // The write in flight answers first (and may give rows back); the rest is written here.
        writer?.waitSync();
        writer = undefined;
        drain();
      } finally {
        closed = true;
        threadWriter?.close();
        listeners.clear();
      }
    },
  };
};
