// Appending: each event checked (event-log-rows.ts) and admitted under its tenant's budget
// (event-log-budget.ts), then given its seq and time and queued (event-log-queue.ts).
// Invariants: a session's seqs are assigned synchronously at append, gap-free and strictly
// increasing from 1 (its last stored seq is read once, before its first append); an append is
// all or nothing: a bad or refused event rejects the whole append before any seq or byte is used.
import { admit, budgetOf } from './event-log-budget.ts';
import type { QueuedRow } from './event-log-port.ts';
import { enqueue, schedule } from './event-log-queue.ts';
import { validate } from './event-log-rows.ts';
import { type Budget, type LogState, type SessionState, sessionOf } from './event-log-state.ts';
import type { SessionEvent, SessionEventInput } from './types.ts';

/** A session's last seq, read from the backend before its first append. */
function loadSeq(s: LogState, sessionId: string, session: SessionState): void {
  if (session.seq < 0) session.seq = s.backend.lastSeq(sessionId);
}

/** One event (what the tool pipeline appends): the general path without its per-append maps. */
export function appendOne(s: LogState, input: SessionEventInput): SessionEvent {
  validate(input);
  const session = sessionOf(s, input.sessionId);
  const row = admit(s, input, session, 0, undefined);
  loadSeq(s, input.sessionId, session);
  (session.budget as Budget).used += row.bytes;
  const event = enqueue(s, input, row, session, s.now());
  schedule(s);
  return event;
}

export function appendMany(s: LogState, inputs: SessionEventInput[]): SessionEvent[] {
  // Check, serialize and admit everything first so a bad or refused event rejects the whole
  // append before any seq or byte is used (and a refused one is never serialized).
  const pending = new Map<Budget, number>();
  const adding = new Set<string>();
  const states: SessionState[] = [];
  const rows = inputs.map((input) => {
    validate(input);
    const session = sessionOf(s, input.sessionId);
    const tenant = budgetOf(s, session);
    const row = admit(s, input, session, pending.get(tenant) ?? 0, adding);
    pending.set(tenant, (pending.get(tenant) ?? 0) + row.bytes);
    states.push(session);
    return row;
  });
  for (const [i, input] of inputs.entries()) loadSeq(s, input.sessionId, states[i] as SessionState);
  for (const [tenant, bytes] of pending) tenant.used += bytes;
  const at = s.now();
  const events = inputs.map((input, i) =>
    enqueue(s, input, rows[i] as QueuedRow, states[i] as SessionState, at),
  );
  if (events.length > 0) schedule(s);
  return events;
}
