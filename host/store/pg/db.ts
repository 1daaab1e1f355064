// Opens the PostgreSQL database the store lives in when DSH_DB is a `postgres://` URL, and owns
// the few rules every Postgres query follows (the counterpart of ../db.ts for libsql):
// - one pg Pool per store (size, TLS, application_name from the options and the URL); opening it
//   does no I/O, the first query connects;
// - int8 and numeric come back as JS numbers, through this pool's own type parsers (never pg's
//   global ones, which other code in the process may rely on): every such column holds epoch ms,
//   a count, a sequence number or a byte size, far below 2^53;
// - `$n` parameters only, never SQL built from values;
// - `tx(fn)` runs fn on ONE client between BEGIN and COMMIT (ROLLBACK when it throws); fn may
//   await only queries on the handle it is given, never other I/O, and the handle refuses
//   queries once the transaction has ended; the server ends a session whose transaction waits
//   on this process longer than idleInTransactionTimeoutMs (a stopped process keeps no locks);
// - errors are translated once, here, into SandboxError STORE_FAILED with the original as `cause`
//   and its SQLSTATE in `data.pgCode` (SandboxErrors pass through unchanged), except a caller's
//   text with a NUL in it (text cannot hold one): BAD_REQUEST, the client's mistake;
// - a connection that dies while idle in the pool is reported to `onError`, never thrown into
//   the event loop (pg emits it on the pool, and an unheard 'error' event ends the process); one
//   that dies while a transaction holds it fails that transaction's queries and is dropped.
import type { ConnectionOptions } from 'node:tls';
import pg from 'pg';
import { isSandboxError, messageOf, SandboxError } from '../../errors.ts';
import { isPostgresUrl } from './url.ts';

export type PgRow = Record<string, unknown>;

/** What one query returns: its rows and how many rows it touched (UPDATE/DELETE/INSERT). */
export interface PgResult<R extends object = PgRow> {
  rows: R[];
  rowCount: number;
}

/** Queries with `$1 … $n` parameters, on the pool or on one transaction's client. */
export interface PgQueries {
  query<R extends object = PgRow>(sql: string, params?: readonly unknown[]): Promise<PgResult<R>>;
  /** The first row, or undefined. */
  one<R extends object = PgRow>(sql: string, params?: readonly unknown[]): Promise<R | undefined>;
  many<R extends object = PgRow>(sql: string, params?: readonly unknown[]): Promise<R[]>;
}

export interface PgDatabase extends PgQueries {
  readonly pool: pg.Pool;
  /**
   * Runs fn inside BEGIN … COMMIT on one client, rolling back when it throws. fn may await only
   * queries on `tx` (no other I/O: the transaction holds its locks meanwhile). Nested calls are
   * not joined: call tx() once per unit of work.
   */
  tx<T>(fn: (tx: PgQueries) => Promise<T>): Promise<T>;
  /** Ends every connection. Idempotent. */
  close(): Promise<void>;
}

export interface OpenPgDatabaseOptions {
  /**
   * `postgres://` or `postgresql://` URL (libpq's form: user, password, host or `?host=<socket dir>`,
   * database, sslmode). What it leaves out, pg takes from libpq's PG* variables (PGPASSWORD, …).
   */
  url: string;
  /** Connections the pool may hold. Default 10. */
  poolSize?: number;
  /**
   * TLS for every connection: true, false, or node:tls options (ca, cert, key, servername). When
   * given it wins over the URL's sslmode/sslcert/sslkey/sslrootcert. Default: what the URL says
   * (pg reads sslmode=require and verify-ca as verify-full: the certificate is checked).
   */
  ssl?: boolean | ConnectionOptions;
  /** The name the server shows in pg_stat_activity. Default: the URL's application_name, else `dsh-sandbox`. */
  applicationName?: string;
  /** How long to wait for a new connection, in ms. Default 10000. */
  connectTimeoutMs?: number;
  /**
   * How long the server lets a transaction of this pool sit idle, waiting for this process's next
   * query, before it ends the session (PostgreSQL's idle_in_transaction_session_timeout). A `tx`
   * awaits only its own queries, so a long idle means the process is stopped or cut off; with
   * replicas its open transaction would otherwise keep the locks it took (the event fence's lock
   * on a family's lease row) and block the replica taking the family over for as long as its
   * connection lives. Default 10000 ms; 0 turns it off.
   */
  idleInTransactionTimeoutMs?: number;
  /** Told about a pooled connection that failed while idle (the pool replaces it). Default: ignored. */
  onError?: (error: SandboxError) => void;
}

/** URL parameters that configure TLS; dropped when the `ssl` option decides instead. */
const SSL_PARAMS = ['ssl', 'sslmode', 'sslcert', 'sslkey', 'sslrootcert', 'uselibpqcompat'];

/** SQLSTATEs worth a hint on what to do next. */
const HINTS: Record<string, string> = {
  '28000': 'check the user in DSH_DB and pg_hba.conf',
  '28P01': 'check the user and password in DSH_DB',
  '3D000': 'create the database first (createdb), or fix its name in DSH_DB',
  '40001': 'a concurrent transaction conflicted; retry',
  '40P01': 'a deadlock with a concurrent transaction; retry',
  '53300': 'the server has no connection slot left; lower the pool size or raise max_connections',
  '57P01': 'the server is shutting down or restarting; retry',
  '57P03': 'the server is starting up; retry',
};
/** SQLSTATE 22021: what the server answers a text parameter with a NUL in it. */
const NUL_IN_TEXT = '22021';
const NETWORK_HINT = 'is PostgreSQL running and reachable at the host in DSH_DB?';

/** Translates anything pg throws into STORE_FAILED (SandboxErrors pass through unchanged). */
export const pgStoreError = (operation: string, cause: unknown): SandboxError => {
  if (isSandboxError(cause)) return cause;
  const error = cause as { code?: unknown; constraint?: unknown } | null;
  const code = typeof error?.code === 'string' ? error.code : undefined;
  const pgCode = code !== undefined && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
  const network = code !== undefined && pgCode === undefined && /^E[A-Z]+$/.test(code);
  const hint = pgCode !== undefined ? HINTS[pgCode] : network ? NETWORK_HINT : undefined;
  // Only a caller's text reaches the server with a NUL (every string pg sends is otherwise valid
  // UTF-8): the call is the client's mistake, not the server's, and must not be retried as a 500.
  if (pgCode === NUL_IN_TEXT)
    return new SandboxError(
      'BAD_REQUEST',
      'A text holds a NUL character (\\0), which the store cannot hold; remove it and send again.',
      { cause, data: { operation, pgCode } },
    );
  return new SandboxError(
    'STORE_FAILED',
    `store: ${operation} failed: ${messageOf(cause)}${hint === undefined ? '' : ` (${hint})`}`,
    {
      cause,
      data: {
        operation,
        ...(pgCode !== undefined ? { pgCode } : {}),
        ...(network ? { errno: code } : {}),
        ...(typeof error?.constraint === 'string' ? { constraint: error.constraint } : {}),
      },
    },
  );
};

/** Runs `fn`, translating anything pg throws into STORE_FAILED named `operation`. */
export const pgGuarded = async <T>(operation: string, fn: () => Promise<T>): Promise<T> => {
  try {
    return await fn();
  } catch (cause) {
    throw pgStoreError(operation, cause);
  }
};

/** The statement's first words, to name a failed query that no caller named. */
const operationOf = (sql: string): string => {
  const flat = sql.replace(/\s+/g, ' ').trim();
  return `query "${flat.length > 60 ? `${flat.slice(0, 60)}…` : flat}"`;
};

/** This pool's parsers: int8 (20) and numeric (1700) as numbers; everything else as pg parses it. */
const numberTypes = (): pg.CustomTypesConfig => {
  const types = new pg.TypeOverrides();
  types.setTypeParser(20, Number);
  types.setTypeParser(1700, Number);
  return types;
};

/** The URL without the parameters an explicit option replaces. */
const withoutParams = (url: string, names: readonly string[]): string => {
  const at = url.indexOf('?');
  if (at < 0) return url;
  const params = new URLSearchParams(url.slice(at + 1));
  for (const name of names) params.delete(name);
  const rest = params.toString();
  return rest === '' ? url.slice(0, at) : `${url.slice(0, at)}?${rest}`;
};

const queriesOn = (target: pg.Pool | pg.PoolClient, open: () => boolean = () => true): PgQueries => {
  const query = async <R extends object>(sql: string, params?: readonly unknown[]): Promise<PgResult<R>> => {
    if (!open()) {
      throw new SandboxError(
        'STORE_FAILED',
        `store: ${operationOf(sql)} ran after its transaction ended (a tx() callback did not await it)`,
        { data: { operation: operationOf(sql) } },
      );
    }
    try {
      const result = await target.query(sql, params as unknown[] | undefined);
      return { rows: result.rows as R[], rowCount: result.rowCount ?? 0 };
    } catch (cause) {
      throw pgStoreError(operationOf(sql), cause);
    }
  };
  async function one<R extends object = PgRow>(
    sql: string,
    params?: readonly unknown[],
  ): Promise<R | undefined> {
    const { rows } = await query<R>(sql, params);
    return rows[0];
  }
  async function many<R extends object = PgRow>(sql: string, params?: readonly unknown[]): Promise<R[]> {
    return (await query<R>(sql, params)).rows;
  }
  return { query, one, many };
};

/** Opens a pool on a `postgres://` URL. No I/O: throws CONFIG_INVALID only for an unusable URL or option. */
export const openPgDatabase = (options: OpenPgDatabaseOptions): PgDatabase => {
  const { url } = options;
  if (typeof url !== 'string' || !isPostgresUrl(url)) {
    throw new SandboxError('CONFIG_INVALID', 'a PostgreSQL store needs a postgres:// or postgresql:// url', {
      data: { scheme: typeof url === 'string' ? url.split(':')[0] : typeof url },
    });
  }
  const poolSize = options.poolSize ?? 10;
  if (!Number.isInteger(poolSize) || poolSize < 1) {
    throw new SandboxError(
      'CONFIG_INVALID',
      `the PostgreSQL pool size must be a positive integer, not ${poolSize}`,
      {
        data: { poolSize },
      },
    );
  }
  const idleInTransaction = options.idleInTransactionTimeoutMs ?? 10_000;
  let names = options.ssl === undefined ? [] : SSL_PARAMS;
  if (options.applicationName !== undefined) names = [...names, 'application_name'];
  const pool = new pg.Pool({
    connectionString: withoutParams(url, names),
    max: poolSize,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    types: numberTypes(),
    ...(idleInTransaction === 0 ? {} : { idle_in_transaction_session_timeout: idleInTransaction }),
    ...(options.ssl === undefined ? {} : { ssl: options.ssl }),
    // pg lets the url's parameters win over these; the option's were taken out of the url above.
    application_name: options.applicationName ?? 'dsh-sandbox',
  });
  pool.on('error', (cause) => options.onError?.(pgStoreError('an idle pooled connection', cause)));
  let closed: Promise<void> | undefined;

  const tx = async <T>(fn: (tx: PgQueries) => Promise<T>): Promise<T> => {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (cause) {
      throw pgStoreError('connect', cause);
    }
    let open = true;
    let broken: Error | undefined;
    // pg emits a connection's death ('Connection terminated unexpectedly', a server restarting, a
    // backend killed) on the client as well as to its queries, and the pool listens only while the
    // client is idle: unheard while checked out here, it is an uncaught exception that ends the
    // process. The queries already reject with it; the client is not handed out again.
    const onDead = (cause: Error) => {
      broken ??= cause;
    };
    client.on('error', onDead);
    const control = async (statement: string): Promise<void> => {
      try {
        await client.query(statement);
      } catch (cause) {
        throw pgStoreError(statement.toLowerCase(), cause);
      }
    };
    try {
      await control('BEGIN');
      const result = await fn(queriesOn(client, () => open));
      await control('COMMIT');
      return result;
    } catch (error) {
      try {
        await client.query('ROLLBACK');
      } catch (rollback) {
        // The connection is unusable (it died mid-transaction): the pool must not hand it out again.
        broken = rollback as Error;
      }
      // fn's own errors pass unchanged (its queries were translated already), as immediate()'s do.
      throw error;
    } finally {
      open = false;
      client.release(broken);
      // Removed only after release: pg-pool's own listener is back on an idle client, and a
      // destroyed one may still report its end.
      if (broken === undefined) client.removeListener('error', onDead);
    }
  };

  return {
    pool,
    ...queriesOn(pool),
    tx,
    close() {
      closed ??= pool.end().catch((cause) => {
        throw pgStoreError('close the connection pool', cause);
      });
      return closed;
    },
  };
};
