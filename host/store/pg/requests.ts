// Host requests on PostgreSQL: the RequestBackend of the shared core (../request-core.ts) over the
// `requests` table, the same rows as the libsql backend (../requests.ts). The core keeps what is
// not storage (ids, expiry timers, waiters, request.* events, the poller that sees an answer another
// replica wrote); this module only reads and writes rows.
// Invariants, as on libsql: a request is written before create() resolves (never batched);
// settling is one conditional `UPDATE … WHERE state = 'pending' RETURNING`, so exactly one writer
// wins across replicas: under READ COMMITTED a second UPDATE waits for the first's row lock, then
// re-checks its WHERE against the committed row and matches nothing (libsql gets the same from its
// single writer). An answer is refused past expires_at in the same statement.
// Reads order by (created_at, rowid): rowid is the identity column baseline.ts adds for SQLite's
// implicit rowid, so requests made in one millisecond list in insertion order on both backends.
import type { HostRequest } from '../../requests/port.ts';
import {
  type ClosableRequestStore,
  createRequestStore,
  type RequestBackend,
  type RequestStoreOptions,
} from '../request-core.ts';
import {
  firstRequest,
  REQUEST_COLUMNS,
  requestInsertParams,
  requestJson,
  type StoredRequest,
  toRequest,
} from '../requests-rows.ts';
import { type PgDatabase, type PgQueries, pgGuarded } from './db.ts';

/**
 * Writes a new pending request on `q`: for the backend below, and inside another store's
 * transaction that writes a drafted request with its own change (pg/schedules.ts fires so).
 */
export const insertPgRequest = async (q: PgQueries, r: HostRequest): Promise<void> => {
  await q.query(
    `INSERT INTO requests (id, session_id, kind, call_id, state, payload, created_at, expires_at)
     VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7)`,
    requestInsertParams(r),
  );
};

export const createPgRequestBackend = (db: PgDatabase): RequestBackend => ({
  insert: (r) => pgGuarded('create request', () => insertPgRequest(db, r)),
  get: (id) =>
    pgGuarded('read request', async () =>
      firstRequest(
        await db.many<StoredRequest>(`SELECT ${REQUEST_COLUMNS} FROM requests WHERE id = $1`, [id]),
      ),
    ),
  list: (sessionId, state) =>
    pgGuarded('list requests', async () =>
      (state === undefined
        ? await db.many<StoredRequest>(
            `SELECT ${REQUEST_COLUMNS} FROM requests WHERE session_id = $1 ORDER BY created_at, rowid`,
            [sessionId],
          )
        : await db.many<StoredRequest>(
            `SELECT ${REQUEST_COLUMNS} FROM requests WHERE session_id = $1 AND state = $2 ORDER BY created_at, rowid`,
            [sessionId, state],
          )
      ).map(toRequest),
    ),
  settle: (id, state, now, value) =>
    pgGuarded(`settle request as ${state}`, async () =>
      firstRequest(
        state === 'answered'
          ? await db.many<StoredRequest>(
              `UPDATE requests SET state = 'answered', answer = $1, answered_at = $2
               WHERE id = $3 AND state = 'pending' AND expires_at > $2 RETURNING ${REQUEST_COLUMNS}`,
              [requestJson(value), now, id],
            )
          : await db.many<StoredRequest>(
              `UPDATE requests SET state = $1, answered_at = $2
               WHERE id = $3 AND state = 'pending' RETURNING ${REQUEST_COLUMNS}`,
              [state, now, id],
            ),
      ),
    ),
  listPending: () =>
    pgGuarded('list pending requests', async () =>
      (
        await db.many<StoredRequest>(
          `SELECT ${REQUEST_COLUMNS} FROM requests WHERE state = 'pending' ORDER BY expires_at`,
        )
      ).map(toRequest),
    ),
});

/** A RequestStore persisted in PostgreSQL. Call `close()` before closing the database. */
export const createPgRequestStore = (
  db: PgDatabase,
  options: RequestStoreOptions = {},
): ClosableRequestStore => createRequestStore(createPgRequestBackend(db), options);
