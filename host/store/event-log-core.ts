// The EventLog behaviour shared by every backend: per-session seq assigned at append in call
// order (gap-free, strictly increasing from 1; in the append call itself when the backend answers
// synchronously, which libsql and memory do), rows queued and written by ONE writer path in one
// batch per tick, readers that see queued rows merged after the durable ones, and subscribers told
// only after their events are durable (so a client never sees a seq a crash could hand out again).
// This module wires the parts, each in its own module over one LogState (event-log-state.ts):
// event-log-port.ts the backend and writer-thread ports and the options; event-log-load.ts takes
// a backend's answers now or later without an await on the synchronous path; event-log-append.ts
// checks an append and gives it seqs; event-log-budget.ts admits, refuses or shrinks each event
// under its tenant's byte budget (large values stored apart, once per tenant) and says what a row
// costs; event-log-queue.ts is the one writer path (queue, rows in flight on the writer thread,
// group commit, retries, subscribers told); event-log-read.ts pages and payloads, queued rows
// included; event-log-calls.ts finds the calls left without a result (the repair after a crash);
// event-log-rows.ts converts between events and rows.
// Invariants: one process writes a given session (with replicas, the family's owner: a fence
// drops what a former owner still appends, event-log-queue.ts); rows are written in append order; a failed
// batch stays queued (flush() rejects, the next tick retries) instead of being dropped.
import { append, lastSeqOf } from './event-log-append.ts';
import { admits, DEFAULT_LOG_BUDGET_BYTES, setBudget, tenantUsageOf, usageOf } from './event-log-budget.ts';
import { unfinishedCalls } from './event-log-calls.ts';
import { answer, settled } from './event-log-load.ts';
import type {
  AsyncEventWriter,
  ClosableEventLog,
  EventBackend,
  EventLogOptions,
  SyncEventBackend,
} from './event-log-port.ts';
import { close, flush, subscribe, whenStored } from './event-log-queue.ts';
import { list, payload } from './event-log-read.ts';
import type { LogState } from './event-log-state.ts';
import { DEFAULT_INLINE_BYTES } from './payloads.ts';
import type { SessionEvent } from './types.ts';

/** A writer thread only with a synchronous backend: the thread writes with the backend's own rows. */
export function createEventLog(
  backend: SyncEventBackend,
  options?: EventLogOptions,
  threadWriter?: AsyncEventWriter,
): ClosableEventLog;
export function createEventLog(backend: EventBackend, options?: EventLogOptions): ClosableEventLog;
export function createEventLog(
  backend: EventBackend,
  options: EventLogOptions = {},
  threadWriter?: AsyncEventWriter,
): ClosableEventLog {
  const s: LogState = {
    backend,
    options,
    now: options.now ?? Date.now,
    batchWindowMs: options.batchWindowMs ?? 0,
    batchIntervalMs: options.batchIntervalMs ?? 0,
    lastWriteAt: Number.NEGATIVE_INFINITY,
    budget: options.budgetBytes ?? DEFAULT_LOG_BUDGET_BYTES,
    inlineBytes: options.inlineBytes ?? DEFAULT_INLINE_BYTES,
    sessions: new Map(),
    budgets: new Map(),
    queuedBlobs: new Map(),
    listeners: new Map(),
    queue: [],
    inFlight: [],
    writer: threadWriter,
    threadWriter,
    appended: 0,
    stored: 0,
    answerWaiters: new Set(),
    storedWaits: new Map(),
    immediate: undefined,
    timeout: undefined,
    failures: 0,
    closed: false,
    closing: undefined,
    answers: undefined,
    chains: new Map(),
  };
  return {
    append: (inputs) => append(s, inputs),
    admits: (sessionId, bytes) => settled(s, () => admits(s, sessionId, bytes)),
    flush: () => flush(s),
    list: (sessionId, query) => list(s, sessionId, query),
    lastSeq: (sessionId) => lastSeqOf(s, sessionId),
    payload: (sessionId, seq, pointer) => payload(s, sessionId, seq, pointer),
    usage: () => settled(s, () => usageOf(s)),
    usageOf: (tenantId) => settled(s, () => tenantUsageOf(s, tenantId)),
    subscribe: (sessionId, listener) => subscribe(s, sessionId, listener),
    unfinishedCalls: (query) => unfinishedCalls(s, query),
    close: () => close(s),
    ...(options.fence === undefined ? {} : { stored: (event: SessionEvent) => whenStored(s, event) }),
    firstSeq: (sessionId) =>
      settled(s, () => answer(s, `first\0${sessionId}`, () => backend.firstSeq?.(sessionId) ?? 1)),
    release: (tenantId, bytes) => {
      const budget = s.budgets.get(tenantId);
      if (budget !== undefined) budget.used = Math.max(0, budget.used - bytes);
    },
    setBudget: (tenantId, bytes) => setBudget(s, tenantId, bytes),
    forget: (sessionId) => {
      const session = s.sessions.get(sessionId);
      if (session !== undefined) session.seq = -1;
    },
  };
}
