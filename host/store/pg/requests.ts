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
import type { HostRequest, HostRequestState } from '../../requests/port.ts';
import {
  type ClosableRequestStore,
  createRequestStore,
  type RequestBackend,
  type RequestStoreOptions,
} from '../request-core.ts';
import { type PgDatabase, type PgQueries, pgGuarded } from './db.ts';

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

const first = (rows: StoredRequest[]): HostRequest | undefined =>
  rows[0] === undefined ? undefined : toRequest(rows[0]);

/**
 * Writes a new pending request on `q`: for the backend below, and inside another store's
 * transaction that writes a drafted request with its own change (pg/schedules.ts fires so).
 */
export const insertPgRequest = async (q: PgQueries, r: HostRequest): Promise<void> => {
  await q.query(
    `INSERT INTO requests (id, session_id, kind, call_id, state, payload, created_at, expires_at)
     VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7)`,
    [r.id, r.sessionId, r.kind, r.callId, JSON.stringify(r.payload) ?? 'null', r.createdAt, r.expiresAt],
  );
};

export const createPgRequestBackend = (db: PgDatabase): RequestBackend => ({
  insert: (r) => pgGuarded('create request', () => insertPgRequest(db, r)),
  get: (id) =>
    pgGuarded('read request', async () =>
      first(await db.many<StoredRequest>(`SELECT ${COLUMNS} FROM requests WHERE id = $1`, [id])),
    ),
  list: (sessionId, state) =>
    pgGuarded('list requests', async () =>
      (state === undefined
        ? await db.many<StoredRequest>(
            `SELECT ${COLUMNS} FROM requests WHERE session_id = $1 ORDER BY created_at, rowid`,
            [sessionId],
          )
        : await db.many<StoredRequest>(
            `SELECT ${COLUMNS} FROM requests WHERE session_id = $1 AND state = $2 ORDER BY created_at, rowid`,
            [sessionId, state],
          )
      ).map(toRequest),
    ),
  settle: (id, state, now, value) =>
    pgGuarded(`settle request as ${state}`, async () =>
      first(
        state === 'answered'
          ? await db.many<StoredRequest>(
              `UPDATE requests SET state = 'answered', answer = $1, answered_at = $2
               WHERE id = $3 AND state = 'pending' AND expires_at > $2 RETURNING ${COLUMNS}`,
              [JSON.stringify(value) ?? 'null', now, id],
            )
          : await db.many<StoredRequest>(
              `UPDATE requests SET state = $1, answered_at = $2
               WHERE id = $3 AND state = 'pending' RETURNING ${COLUMNS}`,
              [state, now, id],
            ),
      ),
    ),
  listPending: () =>
    pgGuarded('list pending requests', async () =>
      (
        await db.many<StoredRequest>(
          `SELECT ${COLUMNS} FROM requests WHERE state = 'pending' ORDER BY expires_at`,
        )
      ).map(toRequest),
    ),
});

/** A RequestStore persisted in PostgreSQL. Call `close()` before closing the database. */
export const createPgRequestStore = (
  db: PgDatabase,
  options: RequestStoreOptions = {},
): ClosableRequestStore => createRequestStore(createPgRequestBackend(db), options);
