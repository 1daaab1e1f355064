// Between events and rows: an input checked and its data shaped into a row's JSON (large values
// moved out as payloads, payloads.ts), an `events` row as every backend reads it (StoredEvent →
// EventRow, absent columns read as undefined), a batch grouped by session and renumbered after
// another writer's rows, a stored row read back as an event, and an event's size as the API shows
// it (what paging by bytes counts). Pure functions over their arguments (renumberAfter changes the
// rows it is given, as both backends' writes do).
// Invariants: a row's `data` is the JSON text of the event's data with markers in place of its
// payloads, and its `refs` the JSON of their list (children first), undefined when nothing moved;
// shape() and validate() throw STORE_FAILED and nothing else; validate() refuses what some backend
// cannot store (a NUL in an id or type), so every backend takes the same events.
import { SandboxError } from '../errors.ts';
import type { EventRow, QueuedRow } from './event-log-port.ts';
import { mayExceed, type PayloadBlob, type SplitData, splitValue, topRefs } from './payloads.ts';
import type { EventSurface, PayloadRef, SessionEvent, SessionEventInput } from './types.ts';

const SURFACES: ReadonlySet<string> = new Set<EventSurface>(['current', 'log-only']);

/** An `events` row as a page's SELECT reads it, on every backend. */
export interface StoredEvent {
  session_id: string;
  seq: number;
  type: string;
  surface: EventSurface;
  call_id: string | null;
  parent_call_id: string | null;
  data: string;
  refs: string | null;
  at: number;
}

/** The columns a page reads, in StoredEvent's order. */
export const EVENT_COLUMNS = 'session_id, seq, type, surface, call_id, parent_call_id, data, refs, at';

export const toEventRow = (r: StoredEvent): EventRow => ({
  sessionId: r.session_id,
  seq: r.seq,
  type: r.type,
  surface: r.surface,
  callId: r.call_id ?? undefined,
  parentCallId: r.parent_call_id ?? undefined,
  data: r.data,
  refs: r.refs ?? undefined,
  at: r.at,
});

/** A `tenant_log_usage` row as usageAll() answers it. */
export const toUsage = (r: { tenant_id: string; bytes: number }): { tenantId: string; bytes: number } => ({
  tenantId: r.tenant_id,
  bytes: r.bytes,
});

/** The `logBytes` of a `tenants.quotas` JSON (validated when set: tenant-keys.ts), undefined when it has none. */
export const logBytesOf = (quotas: string | null | undefined): number | undefined => {
  if (quotas === null || quotas === undefined) return undefined;
  const bytes = (JSON.parse(quotas) as { logBytes?: unknown }).logBytes;
  return typeof bytes === 'number' ? bytes : undefined;
};

/**
 * How many calls a session's rows leave open: its `tool.call` rows minus its `tool.result` rows
 * (what the writes add to `sessions.open_calls`, in the transaction that stores the rows).
 */
export function openedBy(group: readonly EventRow[]): number {
  let opened = 0;
  for (const row of group) {
    if (row.type === 'tool.call') opened++;
    else if (row.type === 'tool.result') opened--;
  }
  return opened;
}

/** A batch's rows by session, each group in queue order (so in seq order). */
export function groupBySession(rows: readonly QueuedRow[]): Map<string, QueuedRow[]> {
  const bySession = new Map<string, QueuedRow[]>();
  for (const row of rows) {
    const group = bySession.get(row.sessionId);
    if (group === undefined) bySession.set(row.sessionId, [row]);
    else group.push(row);
  }
  return bySession;
}

/**
 * Renumbers one session's rows after `stored` (the session's last seq as stored) when another
 * writer got there first, in place, so stored seqs stay unique and gap-free.
 */
export function renumberAfter(group: QueuedRow[], stored: number): void {
  if (stored >= group[0]!.seq)
    group.forEach((row, i) => {
      row.seq = stored + 1 + i;
    });
}

/** What rows with no payloads share (never mutated). */
export const NO_BLOBS: readonly PayloadBlob[] = Object.freeze([]);

/** Fixed part of an event's JSON: `{"seq":…,"at":…,"type":"","surface":"log-only","callId":"",…}`. */
const EVENT_ENVELOPE = 128;

export function validate(input: SessionEventInput): void {
  if (typeof input.sessionId !== 'string' || input.sessionId === '') {
    throw new SandboxError('STORE_FAILED', 'event needs a non-empty sessionId');
  }
  if (typeof input.type !== 'string' || input.type === '') {
    throw new SandboxError('STORE_FAILED', 'event needs a non-empty type', {
      data: { sessionId: input.sessionId },
    });
  }
  // A NUL is refused on every backend: Postgres text cannot hold one, and a row it cannot store
  // would fail its batch on every retry. (Data is JSON text, where a NUL is escaped.)
  if (
    input.sessionId.includes('\0') ||
    input.type.includes('\0') ||
    input.callId?.includes('\0') ||
    input.parentCallId?.includes('\0')
  ) {
    throw new SandboxError('STORE_FAILED', 'event ids and type must not contain NUL characters', {
      data: { sessionId: input.sessionId.replaceAll('\0', '\\0') },
    });
  }
  if (!SURFACES.has(input.surface)) {
    throw new SandboxError(
      'STORE_FAILED',
      `event surface must be 'current' or 'log-only', got ${input.surface}`,
    );
  }
}

/**
 * The data's JSON text with its large values moved out (payloads.ts): a string when nothing moved
 * (the common case, no object built around it).
 */
export function shape(input: SessionEventInput, inlineBytes: number): string | SplitData {
  try {
    if (!mayExceed(input.data, inlineBytes)) {
      const json = JSON.stringify(input.data) ?? 'null';
      if (json.length <= inlineBytes) return json;
    }
    return splitValue(input.data, inlineBytes);
  } catch (cause) {
    throw new SandboxError('STORE_FAILED', `event ${input.type} data is not JSON-serializable`, { cause });
  }
}

export function parseRefs(row: EventRow): PayloadRef[] {
  return row.refs === undefined ? [] : (JSON.parse(row.refs) as PayloadRef[]);
}

/** A row as an event with the given data (no payload list). */
export function baseEvent(row: EventRow, data: SessionEvent['data']): SessionEvent {
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
}

/** A stored row as an event with its markers and their list (no payload is read). */
export function toEvent(row: EventRow): SessionEvent {
  const event = baseEvent(row, JSON.parse(row.data));
  const refs = topRefs(parseRefs(row));
  if (refs.length > 0) event.payloads = refs;
  return event;
}

/** About the length of the event's JSON as the API shows it (envelope, data and payload list). */
export function sizeOf(row: EventRow, refs: PayloadRef[], inline: boolean): number {
  return (
    EVENT_ENVELOPE +
    row.type.length +
    (row.callId?.length ?? 0) +
    (row.parentCallId?.length ?? 0) +
    row.data.length +
    (inline
      ? refs.reduce((n, r) => n + (r.dropped ? 0 : r.bytes), 0)
      : refs.length === 0
        ? 0
        : JSON.stringify(refs).length + 14)
  );
}

/**
 * The payloads a row uses (migration 24 `payloads.uses`): the distinct sha256 of its refs that
 * were stored, not dropped. Every backend's write adds one use of each, retention takes it back.
 */
export function usedShas(refs: string | undefined | null): string[] {
  if (refs == null) return [];
  const shas = new Set<string>();
  for (const ref of JSON.parse(refs) as PayloadRef[]) if (!ref.dropped) shas.add(ref.sha256);
  return [...shas];
}
