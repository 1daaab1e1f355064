// How the session log tools show events: bounded views (data cut to a preview), snippets around a
// search's words, the names and times they carry. Pure functions over SessionEvent.
import type { JsonValue } from '../../json.ts';
import type { SessionEvent } from '../../store/types.ts';

export const SESSION_LOG_LIMITS = {
  /** Hits session_event_search returns. */
  hits: 20,
  /** Sessions session_search returns, and hits shown per session. */
  sessions: 20,
  hitsPerSession: 3,
  /** Hits session_search looks through to group them by session. */
  scan: 200,
  /** Events session_event_read shows on each side of the one asked for. */
  around: 20,
  /** Characters of one event's data shown before it is cut to a preview. */
  eventChars: 4000,
  /** Events a trace shows, and events it reads looking for them. */
  traceEvents: 200,
  traceScan: 20_000,
  /** Characters of a hit's snippet. */
  snippet: 240,
} as const;

export const iso = (t: number): string => new Date(t).toISOString();

/** An event's data as shown: whole when short, else a preview of its JSON. */
export const shownData = (data: JsonValue, max: number): JsonValue => {
  const json = JSON.stringify(data) ?? 'null';
  return json.length <= max ? data : { truncated: true, chars: json.length, preview: json.slice(0, max) };
};

/** Where an event is and what it is, as every view shows it. */
export const eventHead = (event: SessionEvent) => ({
  session_id: event.sessionId,
  seq: event.seq,
  type: event.type,
  surface: event.surface,
  at: iso(event.at),
  ...(event.callId === undefined ? {} : { call_id: event.callId }),
});

export const eventView = (event: SessionEvent, max: number = SESSION_LOG_LIMITS.eventChars) => ({
  ...eventHead(event),
  ...(event.parentCallId === undefined ? {} : { parent_call_id: event.parentCallId }),
  data: shownData(event.data, max),
  ...(event.payloads === undefined ? {} : { payloads: event.payloads.length }),
});

/** The words of an event, flattened, for a snippet. */
const wordsOf = (value: unknown, out: string[], budget: { left: number }): void => {
  if (budget.left <= 0) return;
  if (typeof value === 'string') {
    out.push(value);
    budget.left -= value.length;
  } else if (Array.isArray(value)) for (const item of value) wordsOf(item, out, budget);
  else if (value !== null && typeof value === 'object')
    for (const item of Object.values(value)) wordsOf(item, out, budget);
};

/** Up to SESSION_LOG_LIMITS.snippet characters around the first query term found in the event. */
export const snippetOf = (event: SessionEvent, query: string): string => {
  const words: string[] = [];
  wordsOf(event.data, words, { left: 64 * 1024 });
  const text = words.join(' ').replace(/\s+/g, ' ');
  const lower = text.toLowerCase();
  const term = query.split(/\s+/).find((t) => t !== '' && lower.includes(t.toLowerCase()));
  const at = term === undefined ? 0 : lower.indexOf(term.toLowerCase());
  const half = SESSION_LOG_LIMITS.snippet / 2;
  const from = Math.max(0, at - half);
  return `${from > 0 ? '…' : ''}${text.slice(from, from + SESSION_LOG_LIMITS.snippet)}${from + SESSION_LOG_LIMITS.snippet < text.length ? '…' : ''}`;
};

export const nameOf = (event: SessionEvent): string | undefined => {
  const data = event.data as { name?: unknown } | null;
  return typeof data === 'object' && data !== null && typeof data.name === 'string' ? data.name : undefined;
};
