// What the full-text index of the session log holds for one event, and how a search box query
// becomes an FTS5 expression. The index (migration 7, `events_fts`) is contentless: it keeps only
// the tokens, never a copy of the text, and each entry carries owner tokens (its tenant and its
// session) so that FTS5 itself intersects a search with its tenant before any row is read.
// Invariants: a user query can never reach FTS5 syntax (every term is a quoted string); the text
// indexed for one event is bounded (INDEX_TEXT_MAX), so indexing costs at most a constant factor
// of the bytes the log already counts against its tenant's budget; the log's own readers
// (LOG_READERS) are indexed by name only.

/** Characters of one event's text that are indexed (its row is at most ~16 KiB plus new payloads). */
export const INDEX_TEXT_MAX = 32 * 1024;
/** Characters of a newly stored payload that are indexed, with the event that first stored it. */
export const INDEX_PAYLOAD_MAX = 16 * 1024;
/** Terms a query may have: more is not a search but an attempt to make FTS5 work hard. */
export const MAX_QUERY_TERMS = 16;

/**
 * The tools that read this index. Their calls and results are indexed by type and name only: a
 * search's query and the hits it returned would otherwise match every later search for the same
 * words, and the log's search would fill up with itself.
 */
export const LOG_READERS: ReadonlySet<string> = new Set([
  'session_event_read',
  'session_event_search',
  'session_event_trace',
  'session_search',
  'session_trace',
]);

/** One token per id: hex, so that no tokenizer splits it and no id can look like another. */
const token = (prefix: string, id: string): string => `${prefix}${Buffer.from(id).toString('hex')}`;

/** The owner column of an event's index entry: `t<tenant hex> s<session hex>`. */
export const ownerTokens = (tenantId: string, sessionId: string): string =>
  `${token('t', tenantId)} ${token('s', sessionId)}`;

/**
 * The searchable words of an event: its type, then every string and number in its data (object
 * keys left out: they are the log's vocabulary, not what anybody wrote), cut at `max` characters.
 */
export const indexText = (type: string, data: string, max = INDEX_TEXT_MAX): string => {
  const parts: string[] = [type];
  let size = type.length;
  const walk = (value: unknown): void => {
    if (size >= max) return;
    if (typeof value === 'string') {
      parts.push(value);
      size += value.length + 1;
    } else if (typeof value === 'number' || typeof value === 'boolean') {
      const text = String(value);
      parts.push(text);
      size += text.length + 1;
    } else if (Array.isArray(value)) {
      for (const item of value) walk(item);
    } else if (value !== null && typeof value === 'object') {
      for (const item of Object.values(value)) walk(item);
    }
  };
  try {
    const value = JSON.parse(data) as { name?: unknown } | null;
    const name = typeof value === 'object' && value !== null ? value.name : undefined;
    if (typeof name === 'string' && LOG_READERS.has(name)) parts.push(name);
    else walk(value);
  } catch {
    parts.push(data);
  }
  const text = parts.join(' ');
  return text.length > max ? text.slice(0, max) : text;
};

/** Payloads past this many characters are indexed by their first characters, unparsed. */
const PARSED_PAYLOAD_MAX = 256 * 1024;

/** The searchable text of a payload the event log stores for the first time (every backend). */
export const payloadIndexText = (json: string): string =>
  json.length <= PARSED_PAYLOAD_MAX
    ? indexText('', json, INDEX_PAYLOAD_MAX)
    : json.slice(0, INDEX_PAYLOAD_MAX);

/** The terms of a search box query: whitespace-separated, empty ones dropped, at most MAX_QUERY_TERMS. */
export const queryTerms = (query: string): string[] =>
  query
    .split(/\s+/u)
    .filter((term) => /[\p{L}\p{N}]/u.test(term))
    .slice(0, MAX_QUERY_TERMS);

const quote = (text: string): string => `"${text.replaceAll('"', '""')}"`;

/**
 * The FTS5 expression of a query restricted to one tenant (and, when given, some sessions): each
 * term is a quoted phrase (its words adjacent, in order), all terms must occur. Undefined when the
 * query has no searchable term.
 */
export const ftsExpression = (
  query: string,
  tenantId: string,
  sessionIds?: readonly string[],
): string | undefined => {
  const terms = queryTerms(query);
  if (terms.length === 0) return undefined;
  const owner =
    sessionIds === undefined
      ? quote(token('t', tenantId))
      : `${quote(token('t', tenantId))} AND (${sessionIds.map((id) => quote(token('s', id))).join(' OR ')})`;
  return `owner : (${owner}) AND body : (${terms.map(quote).join(' AND ')})`;
};
