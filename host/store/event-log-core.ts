// The EventLog behaviour shared by every backend: per-session seq assigned synchronously at
// append (gap-free, strictly increasing from 1), rows queued and written by ONE writer path in one
// batch per tick, readers that see queued rows merged after the durable ones, and subscribers told
// only after their events are durable (so a client never sees a seq a crash could hand out again).
// Invariants: one process writes a given session; rows are written in append order; a failed
// batch stays queued (flush() rejects, the next tick retries) instead of being dropped.
import { SandboxError } from '../errors.ts';
import type { EventLog, EventQuery, EventSurface, SessionEvent, SessionEventInput } from './types.ts';

/** An event as queued and stored: data already serialized, so later mutation cannot change it. */
export interface EventRow {
  sessionId: string;
  seq: number;
  type: string;
  surface: EventSurface;
  callId: string | undefined;
  parentCallId: string | undefined;
  data: string;
  at: number;
}

/**
 * Where rows go. All methods are synchronous; `write` is atomic (all rows or none) and may raise
 * the seqs of a session's rows (keeping their order) when another writer got there first.
 */
export interface EventBackend {
  /** The highest seq stored for the session, 0 when none. Called once per session. */
  lastSeq(sessionId: string): number;
  write(rows: EventRow[]): void;
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
}

export interface ClosableEventLog extends EventLog {
  /** Writes what is queued and stops the background writer. */
  close(): void;
}

const SURFACES: ReadonlySet<string> = new Set<EventSurface>(['current', 'log-only']);
export const DEFAULT_EVENT_LIMIT = 500;
export const MAX_EVENT_LIMIT = 5000;

export const toEvent = (row: EventRow): SessionEvent => {
  const event: SessionEvent = {
    sessionId: row.sessionId,
    seq: row.seq,
    type: row.type,
    surface: row.surface,
    data: JSON.parse(row.data),
    at: row.at,
  };
  if (row.callId !== undefined) event.callId = row.callId;
  if (row.parentCallId !== undefined) event.parentCallId = row.parentCallId;
  return event;
};

const serialize = (input: SessionEventInput): string => {
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
  let json: string | undefined;
  try {
    json = JSON.stringify(input.data);
  } catch (cause) {
    throw new SandboxError('STORE_FAILED', `event ${input.type} data is not JSON-serializable`, { cause });
  }
  return json ?? 'null';
};

export const createEventLog = (backend: EventBackend, options: EventLogOptions = {}): ClosableEventLog => {
  const now = options.now ?? Date.now;
  const batchWindowMs = options.batchWindowMs ?? 0;
  const lastSeq = new Map<string, number>();
  const listeners = new Map<string, Set<(event: SessionEvent) => void>>();
  let queue: EventRow[] = [];
  /** Cancels the pending background write, when one is scheduled. */
  let scheduled: (() => void) | undefined;
  let failures = 0;
  let closed = false;

  const notify = (rows: EventRow[]) => {
    for (const row of rows) {
      const set = listeners.get(row.sessionId);
      if (set === undefined) continue;
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

  /** The one writer path: takes the whole queue, writes it atomically, then notifies. */
  const drain = () => {
    scheduled?.();
    scheduled = undefined;
    if (queue.length === 0) return;
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
    // The backend may have renumbered rows after another process's writes: follow it.
    for (const row of batch) {
      if (row.seq > (lastSeq.get(row.sessionId) ?? 0)) lastSeq.set(row.sessionId, row.seq);
    }
    notify(batch);
  };

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

  const nextSeq = (sessionId: string): number => {
    const seq = lastSeq.get(sessionId)! + 1;
    lastSeq.set(sessionId, seq);
    return seq;
  };

  return {
    append(inputs) {
      if (closed) throw new SandboxError('SHUTTING_DOWN', 'the event log is closed');
      // Serialize everything first so a bad event rejects the whole append before any seq is used.
      const data = inputs.map(serialize);
      for (const { sessionId } of inputs) {
        if (!lastSeq.has(sessionId)) lastSeq.set(sessionId, backend.lastSeq(sessionId));
      }
      const at = now();
      const events: SessionEvent[] = [];
      inputs.forEach((input, i) => {
        const row: EventRow = {
          sessionId: input.sessionId,
          seq: nextSeq(input.sessionId),
          type: input.type,
          surface: input.surface,
          callId: input.callId,
          parentCallId: input.parentCallId,
          data: data[i]!,
          at,
        };
        queue.push(row);
        events.push({ ...input, seq: row.seq, at });
      });
      if (events.length > 0) schedule();
      return events;
    },

    async flush() {
      drain();
    },

    list(sessionId, query: EventQuery = {}) {
      const afterSeq = Math.max(0, Math.trunc(query.afterSeq ?? 0));
      const limit = Math.min(MAX_EVENT_LIMIT, Math.max(0, Math.trunc(query.limit ?? DEFAULT_EVENT_LIMIT)));
      if (limit === 0) return [];
      const rows = backend.read(sessionId, afterSeq, limit);
      // Queued rows always have higher seqs than stored ones: append them after.
      for (const row of queue) {
        if (rows.length >= limit) break;
        if (row.sessionId === sessionId && row.seq > afterSeq) rows.push(row);
      }
      return rows.map(toEvent);
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
        drain();
      } finally {
        closed = true;
        listeners.clear();
      }
    },
  };
};
