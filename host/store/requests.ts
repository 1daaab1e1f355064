// The libsql RequestStore: the shared core (request-core.ts) over the `requests` table.
// The statements run synchronously; the backend's methods return their results as promises.
// Invariants: a request is written before create() resolves (requests are rare and must survive a
// crash, so they are not batched); settling is one conditional `UPDATE … WHERE state = 'pending'
// RETURNING`, so exactly one writer wins even across processes sharing the file.
import type { HostRequest, HostRequestState } from '../requests/port.ts';
import { type Database, guarded } from './db.ts';
import {
  type ClosableRequestStore,
  createRequestStore,
  type RequestBackend,
  type RequestStoreOptions,
} from './request-core.ts';

interface StoredRequest {
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

const COLUMNS = 'id, session_id, kind, call_id, state, payload, answer, created_at, expires_at';

const toRequest = (r: StoredRequest): HostRequest => {
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

/**
 * Writes a new pending request, synchronously: for the backend below, and for another store's
 * transaction that writes a drafted request with its own change (schedules.ts fires so).
 */
export const prepareRequestInsert = (db: Database): ((r: HostRequest) => void) => {
  const insert = db.prepare(
    `INSERT INTO requests (id, session_id, kind, call_id, state, payload, created_at, expires_at)
     VALUES (?, ?, ?, ?, 'pending', ?, ?, ?)`,
  );
  return (r) =>
    void insert.run(
      r.id,
      r.sessionId,
      r.kind,
      r.callId,
      JSON.stringify(r.payload) ?? 'null',
      r.createdAt,
      r.expiresAt,
    );
};

export const createLibsqlRequestBackend = (db: Database): RequestBackend => {
  const insert = prepareRequestInsert(db);
  const get = db.prepare(`SELECT ${COLUMNS} FROM requests WHERE id = ?`);
  const list = db.prepare(`SELECT ${COLUMNS} FROM requests WHERE session_id = ? ORDER BY created_at, rowid`);
  const listState = db.prepare(
    `SELECT ${COLUMNS} FROM requests WHERE session_id = ? AND state = ? ORDER BY created_at, rowid`,
  );
  const pending = db.prepare(`SELECT ${COLUMNS} FROM requests WHERE state = 'pending' ORDER BY expires_at`);
  const answer = db.prepare(
    `UPDATE requests SET state = 'answered', answer = ?, answered_at = ?
     WHERE id = ? AND state = 'pending' AND expires_at > ? RETURNING ${COLUMNS}`,
  );
  const close = db.prepare(
    `UPDATE requests SET state = ?, answered_at = ? WHERE id = ? AND state = 'pending' RETURNING ${COLUMNS}`,
  );
  const one = (rows: unknown[]) => (rows[0] === undefined ? undefined : toRequest(rows[0] as StoredRequest));

  // Each method runs its statement synchronously and hands the result back as a promise.
  return {
    insert: async (r) => guarded('create request', () => insert(r)),
    get: async (id) => guarded('read request', () => one(get.all(id))),
    list: async (sessionId, state) =>
      guarded('list requests', () =>
        (state === undefined ? list.all(sessionId) : listState.all(sessionId, state)).map((r) =>
          toRequest(r as StoredRequest),
        ),
      ),
    settle: async (id, state, now, value) =>
      guarded(`settle request as ${state}`, () =>
        state === 'answered'
          ? one(answer.all(JSON.stringify(value) ?? 'null', now, id, now))
          : one(close.all(state, now, id)),
      ),
    listPending: async () =>
      guarded('list pending requests', () => pending.all().map((r) => toRequest(r as StoredRequest))),
  };
};

/** A RequestStore persisted in the store database. Call `close()` before closing the database. */
export const createLibsqlRequestStore = (
  db: Database,
  options: RequestStoreOptions = {},
): ClosableRequestStore => createRequestStore(createLibsqlRequestBackend(db), options);
