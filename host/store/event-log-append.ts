// Appending: each event checked (event-log-rows.ts) and admitted under its tenant's budget
// (event-log-budget.ts), then given its seq and time and queued (event-log-queue.ts).
// Invariants: a session's seqs are assigned in append call order, gap-free and strictly
// increasing from 1 (its last stored seq is read once, before its first append); with a
// synchronous backend in the append call itself, with an asynchronous one once its answers are
// loaded, every later append of the session chained behind it (append). An append is all or
// nothing: a bad or refused event rejects the whole append before any seq or byte is used.
import { SandboxError } from '../errors.ts';
import { admit, budgetOf } from './event-log-budget.ts';
import { answer, gather, isPromise, Loading, loaded, settle, settled } from './event-log-load.ts';
import type { QueuedRow } from './event-log-port.ts';
import { enqueue, schedule } from './event-log-queue.ts';
import { validate } from './event-log-rows.ts';
import { type Budget, type LogState, type SessionState, sessionOf } from './event-log-state.ts';
import type { SessionEvent, SessionEventInput } from './types.ts';

/**
 * A session's last assigned seq (queued events included), after the appends of it still loading:
 * what an append made now would follow (EventLog.lastSeq).
 */
export async function lastSeqOf(s: LogState, sessionId: string): Promise<number> {
  const chain = s.chains.get(sessionId);
  if (chain !== undefined) await chain.catch(() => undefined);
  return settled(s, () => {
    const session = sessionOf(s, sessionId);
    loadSeq(s, sessionId, session);
    return session.seq;
  });
}

/** A session's last seq, read from the backend before its first append. */
function loadSeq(s: LogState, sessionId: string, session: SessionState): void {
  if (session.seq < 0) {
    const seq = answer(s, `seq\0${sessionId}`, () => s.backend.lastSeq(sessionId));
    if (session.seq < 0) session.seq = seq;
  }
}

/**
 * Replicas: refuses an append to a session of a family this process does not hold now, or whose
 * hold it has not had confirmed lately (it was stopped or starved past its lease): a call whose
 * `tool.call` is refused is not run (tools/call-log.ts), so a replica that resumes after losing a
 * family runs nothing more of it, not even the next call of a batch it was in the middle of.
 */
function checkFence(s: LogState, sessionId: string): void {
  const fence = s.options.fence;
  if (fence?.admits === undefined || fence.admits(sessionId)) return;
  throw new SandboxError(
    'OWNER_FENCED',
    'Another replica may run this agent now; nothing more of it runs here. Retry (with the same Idempotency-Key for calls).',
    { data: { sessionId } },
  );
}

/** One event (what the tool pipeline appends): the general path without its per-append maps. */
export function appendOne(s: LogState, input: SessionEventInput): SessionEvent {
  validate(input);
  checkFence(s, input.sessionId);
  const session = sessionOf(s, input.sessionId);
  loadSeq(s, input.sessionId, session);
  const row = admit(s, input, session, 0, undefined);
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
  // An asynchronous backend's loads are gathered over all events, and waited for together.
  const loads: Promise<void>[] = [];
  for (const input of inputs) {
    validate(input);
    checkFence(s, input.sessionId);
    const session = gather(loads, () => sessionOf(s, input.sessionId));
    if (session === undefined) continue;
    gather(loads, () => loadSeq(s, input.sessionId, session));
    states.push(session);
  }
  loaded(loads);
  // What each tenant had dropped and refused before: when a load makes the append run again,
  // what the events before it counted must not count twice.
  const counts = new Map<Budget, { dropped: number; refused: number }>();
  const rows: QueuedRow[] = [];
  for (const [i, input] of inputs.entries()) {
    const session = states[i] as SessionState;
    try {
      const tenant = budgetOf(s, session);
      if (!counts.has(tenant)) counts.set(tenant, { dropped: tenant.dropped, refused: tenant.refused });
      const row = admit(s, input, session, pending.get(tenant) ?? 0, adding);
      pending.set(tenant, (pending.get(tenant) ?? 0) + row.bytes);
      rows.push(row);
    } catch (error) {
      // Past a load, the rest only gathers loads: what they decide is decided on the next run.
      if (error instanceof Loading) loads.push(error.loaded);
      else if (loads.length === 0) throw error;
    }
  }
  if (loads.length > 0) {
    for (const [tenant, before] of counts) Object.assign(tenant, before);
    loaded(loads);
  }
  for (const [tenant, bytes] of pending) tenant.used += bytes;
  const at = s.now();
  const events = inputs.map((input, i) =>
    enqueue(s, input, rows[i] as QueuedRow, states[i] as SessionState, at),
  );
  if (events.length > 0) schedule(s);
  return events;
}

function appendNow(s: LogState, inputs: SessionEventInput[]): SessionEvent[] {
  return inputs.length === 1 ? [appendOne(s, inputs[0] as SessionEventInput)] : appendMany(s, inputs);
}

/**
 * An append: done in this call (an already settled promise) when the backend answers at once and
 * no earlier append of its sessions is still loading; otherwise chained behind those, per session.
 */
export function append(s: LogState, inputs: SessionEventInput[]): Promise<SessionEvent[]> {
  try {
    // Refused when called after close; one still loading when the log closes is done all the same.
    if (s.closed) throw new SandboxError('SHUTTING_DOWN', 'the event log is closed');
    if (s.chains.size > 0 && inputs.some((input) => s.chains.has(input.sessionId))) {
      const kept = copied(inputs);
      const before = Promise.allSettled(inputs.map((input) => s.chains.get(input.sessionId)));
      const events = before.then(() => settle(s, () => appendNow(s, kept)));
      track(s, inputs, events);
      return events;
    }
    let pending = inputs;
    const events = settle(s, () => appendNow(s, pending));
    if (!isPromise(events)) return Promise.resolve(events);
    // Runs again after its loads: with the data as it was when append was called.
    pending = copied(inputs);
    track(s, inputs, events);
    return events;
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * The inputs as they are now, for an append that is done later: the caller may change its data
 * meanwhile, and an appended event never changes. Data that does not serialize stays as it is
 * (the append then fails as it would have at once).
 */
function copied(inputs: SessionEventInput[]): SessionEventInput[] {
  return inputs.map((input) => {
    try {
      return { ...input, data: JSON.parse(JSON.stringify(input.data) ?? 'null') };
    } catch {
      return input;
    }
  });
}

/** Makes `events` the append later ones of its sessions wait behind, until it settles. */
function track(s: LogState, inputs: SessionEventInput[], events: Promise<unknown>): void {
  const ids = new Set(inputs.map((input) => input.sessionId));
  for (const id of ids) s.chains.set(id, events);
  const done = () => {
    for (const id of ids) if (s.chains.get(id) === events) s.chains.delete(id);
  };
  events.then(done, done);
}
