// The libsql RequestStore: the shared core (request-core.ts) over the `requests` table.
// The statements run synchronously; the backend's methods return their results as promises.
// Invariants: a request is written before create() resolves (requests are rare and must survive a
// crash, so they are not batched); settling is one conditional `UPDATE … WHERE state = 'pending'
// RETURNING`, so exactly one writer wins even across processes sharing the file.
import type { HostRequest } from '../requests/port.ts';
import { type Database, guarded } from './db.ts';
import {
  type ClosableRequestStore,
  createRequestStore,
  type RequestBackend,
  type RequestStoreOptions,
} from './request-core.ts';
import {
  firstRequest,
  REQUEST_COLUMNS,
  requestInsertParams,
  requestJson,
  type StoredRequest,
  toRequest,
} from './requests-rows.ts';

/**
 * Writes a new pending request, synchronously: for the backend below, and for another store's
 * transaction that writes a drafted request with its own change (schedules.ts fires so).
 */
export const prepareRequestInsert = (db: Database): ((r: HostRequest) => void) => {
  const insert = db.prepare(
    `INSERT INTO requests (id, session_id, kind, call_id, state, payload, created_at, expires_at)
     VALUES (?, ?, ?, ?, 'pending', ?, ?, ?)`,
  );
  return (r) => void insert.run(...requestInsertParams(r));
};

export const createLibsqlRequestBackend = (db: Database): RequestBackend => {
  const insert = prepareRequestInsert(db);
  const get = db.prepare(`SELECT ${REQUEST_COLUMNS} FROM requests WHERE id = ?`);
  const list = db.prepare(
    `SELECT ${REQUEST_COLUMNS} FROM requests WHERE session_id = ? ORDER BY created_at, rowid`,
  );
  const listState = db.prepare(
    `SELECT ${REQUEST_COLUMNS} FROM requests WHERE session_id = ? AND state = ? ORDER BY created_at, rowid`,
  );
  const pending = db.prepare(
    `SELECT ${REQUEST_COLUMNS} FROM requests WHERE state = 'pending' ORDER BY expires_at`,
  );
  const answer = db.prepare(
    `UPDATE requests SET state = 'answered', answer = ?, answered_at = ?
     WHERE id = ? AND state = 'pending' AND expires_at > ? RETURNING ${REQUEST_COLUMNS}`,
  );
  const close = db.prepare(
    `UPDATE requests SET state = ?, answered_at = ? WHERE id = ? AND state = 'pending' RETURNING ${REQUEST_COLUMNS}`,
  );

  // Each method runs its statement synchronously and hands the result back as a promise.
  return {
    insert: async (r) => guarded('create request', () => insert(r)),
    get: async (id) => guarded('read request', () => firstRequest(get.all(id))),
    list: async (sessionId, state) =>
      guarded('list requests', () =>
        (state === undefined ? list.all(sessionId) : listState.all(sessionId, state)).map((r) =>
          toRequest(r as StoredRequest),
        ),
      ),
    settle: async (id, state, now, value) =>
      guarded(`settle request as ${state}`, () =>
        state === 'answered'
          ? firstRequest(answer.all(requestJson(value), now, id, now))
          : firstRequest(close.all(state, now, id)),
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
