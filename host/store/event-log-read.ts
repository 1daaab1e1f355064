// Reading the log: a page of a session's events (bounded in count and in bytes, large values
// inlined or left as markers) and one payload of one event. Readers see the rows still queued or
// in flight merged after the durable ones, so an append is readable at once, before it is durable.
// Invariants: queued and in-flight rows always have higher seqs than the stored rows of their
// session (one writer per session), so a page is the backend's rows followed by those; a page holds
// at least one event when one exists, however large.
import { SandboxError } from '../errors.ts';
import { baseEvent, parseRefs, sizeOf, toEvent } from './event-log-rows.ts';
import { type LogState, readBlob, sessionOf } from './event-log-state.ts';
import { payloadText, resolveData, topRefs } from './payloads.ts';
import type { EventQuery, SessionEvent } from './types.ts';

export const DEFAULT_EVENT_LIMIT = 500;
export const MAX_EVENT_LIMIT = 5000;

export function list(s: LogState, sessionId: string, query: EventQuery = {}): SessionEvent[] {
  const afterSeq = Math.max(0, Math.trunc(query.afterSeq ?? 0));
  const limit = Math.min(MAX_EVENT_LIMIT, Math.max(0, Math.trunc(query.limit ?? DEFAULT_EVENT_LIMIT)));
  const maxBytes = query.maxBytes ?? Number.POSITIVE_INFINITY;
  const inline = query.payloads !== 'refs';
  if (limit === 0) return [];
  const rows = s.backend.read(sessionId, afterSeq, limit);
  // Queued rows always have higher seqs than stored ones: append them after. Rows in flight
  // may be stored by now: those past the last stored one are not.
  let after = rows.at(-1)?.seq ?? afterSeq;
  for (const row of s.inFlight.length === 0 ? s.queue : [...s.inFlight, ...s.queue]) {
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
export function payload(s: LogState, sessionId: string, seq: number, pointer: string): string {
  const row =
    s.queue.find((r) => r.sessionId === sessionId && r.seq === seq) ??
    s.inFlight.find((r) => r.sessionId === sessionId && r.seq === seq) ??
    s.backend.read(sessionId, Math.max(0, seq - 1), 1).find((r) => r.seq === seq);
  if (row === undefined)
    throw new SandboxError('NOT_FOUND', `No event ${seq} in this log.`, { data: { seq } });
  const tenant = sessionOf(s, sessionId).tenantId;
  return payloadText(parseRefs(row), pointer, (sha) => readBlob(s, tenant, sha));
}
