// Reading the log: a page of a session's events (bounded in count and in bytes, large values
// inlined or left as markers) and one payload of one event. Readers see the rows still queued or
// in flight merged after the durable ones, so an append is readable at once, before it is durable;
// a `durable` read leaves them out (what clients are shown: a seq they saw is never handed out again).
// Both take the backend's answers now or later (event-log-load.ts); the queued rows are taken when
// the read is called, so a batch stored while an asynchronous backend reads is in one or the other.
// Invariants: queued and in-flight rows always have higher seqs than the stored rows of their
// session (one writer per session), so a page is the backend's rows followed by those; a page holds
// at least one event when one exists, however large.
import { SandboxError } from '../errors.ts';
import { answer, settled } from './event-log-load.ts';
import type { EventRow } from './event-log-port.ts';
import { baseEvent, parseRefs, sizeOf, toEvent } from './event-log-rows.ts';
import { type LogState, readBlob, sessionOf } from './event-log-state.ts';
import { payloadText, resolveData, topRefs } from './payloads.ts';
import type { EventQuery, SessionEvent } from './types.ts';

export const DEFAULT_EVENT_LIMIT = 500;
export const MAX_EVENT_LIMIT = 5000;

/** The rows not yet known stored, oldest first: what a read started now must merge. */
function pendingRows(s: LogState): readonly EventRow[] {
  return s.inFlight.length === 0 ? s.queue : [...s.inFlight, ...s.queue];
}

export function list(s: LogState, sessionId: string, query: EventQuery = {}): Promise<SessionEvent[]> {
  const afterSeq = Math.max(0, Math.trunc(query.afterSeq ?? 0));
  const limit = Math.min(MAX_EVENT_LIMIT, Math.max(0, Math.trunc(query.limit ?? DEFAULT_EVENT_LIMIT)));
  const maxBytes = query.maxBytes ?? Number.POSITIVE_INFINITY;
  const inline = query.payloads !== 'refs';
  if (limit === 0) return Promise.resolve([]);
  // Taken now, not copied: a batch taken for writing replaces the queue array instead of emptying
  // it, so what is queued now stays in `pending` (rows appended later join it, all newer).
  const pending = query.durable === true ? [] : pendingRows(s);
  return settled(s, () => page(s, sessionId, pending, afterSeq, limit, maxBytes, inline));
}

function page(
  s: LogState,
  sessionId: string,
  pending: readonly EventRow[],
  afterSeq: number,
  limit: number,
  maxBytes: number,
  inline: boolean,
): SessionEvent[] {
  const stored = answer(s, 'read', () => s.backend.read(sessionId, afterSeq, limit));
  let rows = stored;
  // Queued rows always have higher seqs than stored ones: append them after. Rows in flight
  // may be stored by now: those past the last stored one are not.
  let after = rows.at(-1)?.seq ?? afterSeq;
  for (const row of pending) {
    if (rows.length >= limit) break;
    if (row.sessionId === sessionId && row.seq > after) {
      // A copy first: an asynchronous backend's answer is kept for a rerun of this page.
      if (rows === stored) rows = stored.slice();
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
      const tenant = sessionOf(s, sessionId).tenantId;
      events.push(
        baseEvent(
          row,
          resolveData(row.data, refs, (sha) => readBlob(s, tenant, sha)),
        ),
      );
    }
  }
  return events;
}

/** The text of one payload of event `seq` (a JSON pointer into its data). */
export function payload(s: LogState, sessionId: string, seq: number, pointer: string): Promise<string> {
  const queued =
    s.queue.find((r) => r.sessionId === sessionId && r.seq === seq) ??
    s.inFlight.find((r) => r.sessionId === sessionId && r.seq === seq);
  return settled(s, () => payloadOf(s, sessionId, seq, pointer, queued));
}

function payloadOf(
  s: LogState,
  sessionId: string,
  seq: number,
  pointer: string,
  queued: EventRow | undefined,
): string {
  const row =
    queued ??
    answer(s, 'read', () => s.backend.read(sessionId, Math.max(0, seq - 1), 1)).find((r) => r.seq === seq);
  if (row === undefined)
    throw new SandboxError('NOT_FOUND', `No event ${seq} in this log.`, { data: { seq } });
  const tenant = sessionOf(s, sessionId).tenantId;
  return payloadText(parseRefs(row), pointer, (sha) => readBlob(s, tenant, sha));
}
