// The rows of host requests (`requests`) as both backends of the RequestBackend read and write
// them: the row type, its column list, row → request, a new request's insert parameters and the
// JSON an answer is stored as. One module, so the libsql (requests.ts) and PostgreSQL
// (pg/requests.ts) backends mean the same by every column; each keeps only its SQL. Imports no backend.
import type { HostRequest, HostRequestState } from '../requests/port.ts';

export interface StoredRequest {
  id: string;
  session_id: string;
  kind: string;
  call_id: string;
  state: HostRequestState;
  payload: string;
  answer: string | null;
  created_at: number;
  expires_at: number;
}

/** The columns every read selects (and every settling UPDATE returns), in StoredRequest's order. */
export const REQUEST_COLUMNS =
  'id, session_id, kind, call_id, state, payload, answer, created_at, expires_at';

export const toRequest = (r: StoredRequest): HostRequest => {
  const request: HostRequest = {
    id: r.id,
    sessionId: r.session_id,
    kind: r.kind,
    callId: r.call_id,
    state: r.state,
    payload: JSON.parse(r.payload),
    createdAt: r.created_at,
    expiresAt: r.expires_at,
  };
  if (r.answer !== null) request.answer = JSON.parse(r.answer);
  return request;
};

/** The first row as a request, or undefined (a settling UPDATE … RETURNING that matched nothing). */
export const firstRequest = (rows: unknown[]): HostRequest | undefined =>
  rows[0] === undefined ? undefined : toRequest(rows[0] as StoredRequest);

/** A stored JSON value: `undefined` (which JSON.stringify drops) is kept as null. */
export const requestJson = (value: unknown): string => JSON.stringify(value) ?? 'null';

/**
 * A new pending request's values for `INSERT INTO requests (id, session_id, kind, call_id, state,
 * payload, created_at, expires_at)`, state being the literal 'pending'.
 */
export const requestInsertParams = (r: HostRequest): (string | number)[] => [
  r.id,
  r.sessionId,
  r.kind,
  r.callId,
  requestJson(r.payload),
  r.createdAt,
  r.expiresAt,
];
