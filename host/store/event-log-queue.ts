// The one writer path: admitted rows are queued, and drain() takes the whole queue and writes it
// in one atomic batch, on the caller's thread (backend.write), handed over to the writer thread
// (event-writer.ts), or to an asynchronous backend's write (its promise answers as the thread
// does); what follows a stored batch (seqs followed, payloads no longer queued, subscribers told)
// is committed()'s. Writes run at the next setImmediate, or after the batch window, and while
// appends keep coming no sooner than the batch interval after the last write began (group commit:
// one transaction per interval under load, not one per window); flush() and close() write at once.
// Invariants: rows are written in append order; a failed batch stays queued (flush() rejects, the
// next tick retries, backing off while writes keep failing) instead of being dropped; subscribers
// are told only after their events are durable, so a client never sees a seq a crash could hand
// out again. With a writer thread or an asynchronous backend one write is in flight, everything
// appended meanwhile goes into the next one (group commit), and the rows in flight count as queued
// for readers until the answer says they are stored; once the thread is lost, the rest is written
// on the caller's thread.
import { SandboxError } from '../errors.ts';
import { isPromise } from './event-log-load.ts';
import {
  type AsyncEventWriter,
  type EventFence,
  type QueuedRow,
  type SyncEventBackend,
  TRANSACTION_ROWS,
} from './event-log-port.ts';
import { NO_BLOBS, toEvent } from './event-log-rows.ts';
import { blobKey, type LogState, type SessionState } from './event-log-state.ts';
import type { SessionEvent, SessionEventInput } from './types.ts';

type WriteAnswer = Parameters<Parameters<AsyncEventWriter['write']>[1]>[0];

/** Queues an admitted row (its session's seq loaded) with its seq and time; the event appended. */
export function enqueue(
  s: LogState,
  input: SessionEventInput,
  row: QueuedRow,
  session: SessionState,
  at: number,
): SessionEvent {
  row.seq = ++session.seq;
  row.at = at;
  if (s.options.fence !== undefined) {
    const token = s.options.fence.tokenOf(row.sessionId);
    if (token !== undefined) row.fence = token;
  }
  for (const blob of row.blobs) s.queuedBlobs.set(blobKey(row.tenantId, blob.sha256), blob.json);
  s.queue.push(row);
  s.appended++;
  return { ...input, seq: row.seq, at };
}

/** Writes the queue soon (see the header), unless a write is already scheduled. */
export function schedule(s: LogState): void {
  if (s.closed) {
    // Only an asynchronous backend's append that was loading when the log closed gets here.
    try {
      drain(s);
    } catch (error) {
      s.options.onError?.(error);
    }
    return;
  }
  if (s.immediate !== undefined || s.timeout !== undefined) return;
  if (s.failures > 0) {
    later(s, 50);
    return;
  }
  // A queue that fills a transaction gains nothing by waiting for the interval.
  const spaced =
    s.queue.length < TRANSACTION_ROWS ? s.lastWriteAt + s.batchIntervalMs - performance.now() : 0;
  const wait = Math.max(s.batchWindowMs, spaced);
  if (wait > 0)
    later(s, wait, true); // ref'd: queued events keep the process up
  else s.immediate = setImmediate(runScheduled, s);
}

/** Retries are unref'd so a store that keeps failing never holds the process open. */
function later(s: LogState, ms: number, ref = false): void {
  const handle = setTimeout(runScheduled, ms, s);
  if (!ref) handle.unref();
  s.timeout = handle;
}

function runScheduled(s: LogState): void {
  s.immediate = undefined;
  s.timeout = undefined;
  try {
    drain(s);
  } catch (error) {
    s.options.onError?.(error);
    if (!s.closed) later(s, Math.min(5000, 50 * 2 ** Math.min(s.failures, 7)));
  }
}

/** Cancels the pending background write, when one is scheduled. */
function unschedule(s: LogState): void {
  if (s.immediate !== undefined) clearImmediate(s.immediate);
  if (s.timeout !== undefined) clearTimeout(s.timeout);
  s.immediate = undefined;
  s.timeout = undefined;
}

/** The one writer path: takes the whole queue, writes it atomically (or hands it to the thread), then notifies. */
export function drain(s: LogState): void {
  unschedule(s);
  if (s.queue.length === 0) return;
  if (s.options.fence !== undefined) dropFenced(s, s.options.fence);
  if (s.queue.length === 0) return;
  if (s.writer !== undefined) {
    handOver(s, s.writer);
    return;
  }
  // An asynchronous write in flight: its answer sends the rest (one transaction at a time).
  if (s.inFlight.length > 0) return;
  const batch = s.queue;
  s.queue = [];
  s.lastWriteAt = performance.now();
  let written: unknown;
  try {
    written = s.backend.write(batch);
  } catch (error) {
    s.queue = batch.concat(s.queue);
    s.failures++;
    throw error;
  }
  if (isPromise(written)) {
    s.inFlight = batch;
    written.then(
      () => onAnswer(s, batch, { stored: batch.length }),
      (error: unknown) => onAnswer(s, batch, { stored: 0, error }),
    );
    return;
  }
  s.failures = 0;
  committed(s, batch);
}

/**
 * Drops the queued rows of families this process no longer holds in the epoch they were appended
 * in (another replica owns them now and repairs their log): counted as settled, so flush() does not
 * wait for them, and the families reported lost so their work stops here.
 */
function dropFenced(s: LogState, fence: EventFence): void {
  let lost: Set<string> | undefined;
  const kept = s.queue.filter((row) => {
    const token = row.fence;
    if (token === undefined) return true;
    const now = fence.tokenOf(row.sessionId);
    if (token !== 'lost' && now !== undefined && now !== 'lost' && now.epoch === token.epoch) return true;
    lost ??= new Set();
    if (token !== 'lost') lost.add(token.familyId);
    for (const blob of row.blobs) s.queuedBlobs.delete(blobKey(row.tenantId, blob.sha256));
    settleStored(s, row, fencedOut(row.sessionId));
    return false;
  });
  if (lost === undefined) return;
  s.stored += s.queue.length - kept.length;
  s.queue = kept;
  if (lost.size > 0) fence.lost([...lost]);
}

/** Gives the queue to the writer thread unless a write is in flight (its answer sends the rest). */
function handOver(s: LogState, thread: AsyncEventWriter): void {
  if (s.inFlight.length > 0 || s.queue.length === 0) return;
  const batch = s.queue;
  s.queue = [];
  s.inFlight = batch;
  s.lastWriteAt = performance.now();
  thread.write(batch, (answer) => onAnswer(s, batch, answer));
}

/** The writer thread's answer for `batch`: what it stored is committed, the rest queued again. */
function onAnswer(s: LogState, batch: QueuedRow[], answer: WriteAnswer): void {
  s.inFlight = [];
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
    // A writer thread is only given with a synchronous backend (createEventLog's signature).
    s.writer = undefined;
    const backend = s.backend as SyncEventBackend;
    const kept = rest.filter((row) => row.seq > backend.lastSeq(row.sessionId));
    done.push(...rest.filter((row) => !kept.includes(row)));
    rest = kept;
  }
  if (done.length > 0) committed(s, done);
  const waiters = [...s.answerWaiters];
  s.answerWaiters.clear();
  if (answer.error === undefined) {
    s.failures = 0;
    for (const w of waiters) w.resolve();
    if (s.queue.length > 0) {
      // An asynchronous backend's log closed while this write was in flight writes the rest now.
      if (s.closed) drain(s);
      else schedule(s);
    }
    return;
  }
  s.queue = rest.concat(s.queue);
  s.options.onError?.(answer.error);
  if (answer.lost) {
    // Not a failed write: the rest is written here from now on.
    for (const w of waiters) w.resolve();
    if (!s.closed) schedule(s);
    return;
  }
  s.failures++;
  for (const w of waiters) w.reject(answer.error);
  if (!s.closed) schedule(s);
}

/** What follows a stored batch: seqs followed, payloads no longer queued, subscribers told. */
function committed(s: LogState, batch: QueuedRow[]): void {
  s.stored += batch.length;
  let session: SessionState | undefined;
  let sessionId: string | undefined;
  let blobs = false;
  for (const row of batch) {
    // The backend may have renumbered rows after another process's writes: follow it.
    if (row.sessionId !== sessionId) {
      sessionId = row.sessionId;
      session = s.sessions.get(sessionId);
    }
    if (session !== undefined && row.seq > session.seq) session.seq = row.seq;
    if (row.blobs.length === 0) continue;
    blobs = true;
    for (const blob of row.blobs) s.queuedBlobs.delete(blobKey(row.tenantId, blob.sha256));
  }
  if (s.storedWaits.size > 0) for (const row of batch) settleStored(s, row);
  if (s.listeners.size > 0) notify(s, batch);
  if (blobs) for (const row of batch) row.blobs = NO_BLOBS;
}

const fencedOut = (sessionId: string): SandboxError =>
  new SandboxError(
    'OWNER_FENCED',
    'Another replica runs this agent now; this event was not written here. Retry (with the same Idempotency-Key for calls).',
    { data: { sessionId } },
  );

/** Tells whoever waits for the row's storing (EventLog.stored): stored, or dropped with `error`. */
function settleStored(s: LogState, row: QueuedRow, error?: unknown): void {
  const waiting = s.storedWaits.get(row);
  if (waiting === undefined) return;
  s.storedWaits.delete(row);
  if (error === undefined) waiting.resolve();
  else waiting.reject(error);
}

/**
 * Resolves once an appended event is stored (EventLog.stored), rejecting OWNER_FENCED when its row
 * is dropped as fenced. Asked right after the append (its row still queued or in flight); a row no
 * longer pending was stored, unless its family was lost here meanwhile.
 */
export function whenStored(s: LogState, event: SessionEvent): Promise<void> {
  const pending = (rows: readonly QueuedRow[]) => {
    for (let i = rows.length - 1; i >= 0; i--) {
      const row = rows[i] as QueuedRow;
      if (row.seq === event.seq && row.sessionId === event.sessionId) return row;
    }
    return undefined;
  };
  const row = pending(s.queue) ?? pending(s.inFlight);
  if (row === undefined) {
    const token = s.options.fence?.tokenOf(event.sessionId);
    return token === 'lost' ? Promise.reject(fencedOut(event.sessionId)) : Promise.resolve();
  }
  const stored = new Promise<void>((resolve, reject) => {
    s.storedWaits.set(row, { resolve, reject });
  });
  // A call waits for this row before it runs: written at the next turn, not after the batch window
  // (what is appended in the same turn, a batch's other calls, still goes in the same write).
  if (s.timeout !== undefined && s.failures === 0 && s.inFlight.length === 0) {
    clearTimeout(s.timeout);
    s.timeout = undefined;
    s.immediate = setImmediate(runScheduled, s);
  }
  // Asked of a log closing or closed: what it did not store by then, it never will.
  if (s.closing !== undefined) void s.closing.then(...twice(() => refuseStoredWaits(s)));
  return stored;
}

function notify(s: LogState, rows: QueuedRow[]): void {
  for (const row of rows) {
    const set = s.listeners.get(row.sessionId);
    if (set === undefined) continue;
    // Subscribers see what `payloads: 'refs'` readers see: large values stay markers.
    const event = toEvent(row);
    for (const listener of [...set]) {
      try {
        listener(event);
      } catch (error) {
        s.options.onError?.(error);
      }
    }
  }
}

export function subscribe(
  s: LogState,
  sessionId: string,
  listener: (event: SessionEvent) => void,
): () => void {
  const set = s.listeners.get(sessionId) ?? new Set();
  s.listeners.set(sessionId, set);
  set.add(listener);
  return () => {
    set.delete(listener);
    if (set.size === 0 && s.listeners.get(sessionId) === set) s.listeners.delete(sessionId);
  };
}

/** Resolves at the writer thread's next answer, rejecting when that write failed. */
function nextAnswer(s: LogState): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    s.answerWaiters.add({ resolve, reject });
  });
}

export async function flush(s: LogState): Promise<void> {
  // Appends still loading (asynchronous backends) count as appended: they were called before.
  if (s.chains.size > 0) await Promise.allSettled([...s.chains.values()]);
  // Rows are stored in append order: everything appended so far is durable when `stored` gets there.
  const target = s.appended;
  while (s.stored < target) {
    drain(s);
    if (s.inFlight.length > 0) await nextAnswer(s);
  }
}

/**
 * Stops the log: appends are refused from this call on, and everything queued is written. With a
 * synchronous backend that happens in this call (a failed write throws from it, as it always did;
 * the promise is already resolved); with an asynchronous one the write in flight answers first,
 * then what is queued behind it, and appends still loading when close was called, are written:
 * the promise resolves once all of it is stored and rejects when one of those writes fails (those
 * rows are then lost, the log being closed). Calling close again returns the same promise.
 */
export function close(s: LogState): Promise<void> {
  if (s.closed) return s.closing ?? Promise.resolve();
  try {
    // The write in flight answers first (and may give rows back); the rest is written here.
    s.writer?.waitSync();
    s.writer = undefined;
    drain(s);
  } finally {
    s.closed = true;
    s.threadWriter?.close();
    s.listeners.clear();
  }
  // Only an asynchronous backend leaves rows unstored here (schedule() and the write's answer
  // write the rest at once on a closed log): wait for them as flush() does.
  s.closing = s.stored === s.appended && s.chains.size === 0 ? Promise.resolve() : flush(s);
  // Rows the log closed without storing are never stored: whoever waits for one is told so.
  void s.closing.then(...twice(() => refuseStoredWaits(s)));
  return s.closing;
}

const twice = (f: () => void): [() => void, () => void] => [f, f];

function refuseStoredWaits(s: LogState): void {
  const error = new SandboxError('SHUTTING_DOWN', 'the event log closed before this event was stored');
  for (const row of [...s.storedWaits.keys()]) settleStored(s, row, error);
}
