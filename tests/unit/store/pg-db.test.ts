// host/store/pg/db.ts against the run's private PostgreSQL cluster (tests/helpers/postgres.ts).
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { SandboxError } from '../../../host/errors.ts';
import { openPgDatabase, type PgDatabase } from '../../../host/store/pg/db.ts';
import { createDatabase, describePostgres, type TestDatabase } from '../../helpers/postgres.ts';
import { until } from '../../helpers/until.ts';

describePostgres('postgres store database', () => {
  let database: TestDatabase;
  let db: PgDatabase;
  const opened: PgDatabase[] = [];
  const open = (options: Partial<Parameters<typeof openPgDatabase>[0]> = {}) => {
    const one = openPgDatabase({ url: database.url, ...options });
    opened.push(one);
    return one;
  };

  beforeAll(async () => {
    database = await createDatabase();
    db = open();
    await db.query('CREATE TABLE t (id text PRIMARY KEY, n bigint, x numeric, b bytea)');
  });
  afterAll(async () => {
    for (const one of opened) await one.close();
    await database.drop();
  });

  it('runs $n queries and reads int8 and numeric as numbers, without touching pg.types', async () => {
    const insert = await db.query('INSERT INTO t VALUES ($1, $2, $3, $4), ($5, $6, $7, $8)', [
      'a',
      1_700_000_000_123,
      '12.5',
      Buffer.from([1, 2]),
      'b',
      2,
      null,
      null,
    ]);
    expect(insert.rowCount).toBe(2);
    expect(await db.one('SELECT id, n, x, b FROM t WHERE id = $1', ['a'])).toEqual({
      id: 'a',
      n: 1_700_000_000_123,
      x: 12.5,
      b: Buffer.from([1, 2]),
    });
    expect(await db.many('SELECT count(*) AS c, sum(n) AS s FROM t')).toEqual([
      { c: 2, s: 1_700_000_000_125 },
    ]);
    expect(await db.one('SELECT id FROM t WHERE id = $1', ['nope'])).toBeUndefined();
    // The parsers are this pool's: the process-wide ones still give strings.
    expect(pg.types.getTypeParser(20, 'text')('5')).toBe('5');
  });

  it('ends a transaction left idle (its process paused), so its locks do not block the others for good', async () => {
    const paused = open({ idleInTransactionMs: 300 });
    await db.query('INSERT INTO t (id) VALUES ($1)', ['locked']);
    let locked!: () => void;
    const lockTaken = new Promise<void>((resolve) => {
      locked = resolve;
    });
    let resume!: () => void;
    const resumed = new Promise<void>((resolve) => {
      resume = resolve;
    });
    const held = paused.tx(async (tx) => {
      await tx.query('SELECT id FROM t WHERE id = $1 FOR SHARE', ['locked']);
      locked();
      await resumed; // paused: no statement while the other connection waits on the lock
      await tx.query('SELECT 1');
    });
    const failed = expect(held).rejects.toMatchObject({ code: 'STORE_FAILED' });
    await lockTaken;
    // Waits on the FOR SHARE until the server ends the idle transaction.
    expect((await db.query('UPDATE t SET n = 1 WHERE id = $1', ['locked'])).rowCount).toBe(1);
    resume();
    await failed;
  });

  it('commits a transaction on one client and rolls it back when fn throws (its error unchanged)', async () => {
    const pids = await db.tx(async (tx) => {
      await tx.query('INSERT INTO t (id) VALUES ($1)', ['tx1']);
      const a = await tx.one<{ p: number }>('SELECT pg_backend_pid() AS p');
      const b = await tx.one<{ p: number }>('SELECT pg_backend_pid() AS p');
      return [a?.p, b?.p];
    });
    expect(pids[0]).toBe(pids[1]);
    expect(await db.one('SELECT id FROM t WHERE id = $1', ['tx1'])).toEqual({ id: 'tx1' });

    const boom = new Error('boom');
    await expect(
      db.tx(async (tx) => {
        await tx.query('INSERT INTO t (id) VALUES ($1)', ['tx2']);
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(await db.one('SELECT id FROM t WHERE id = $1', ['tx2'])).toBeUndefined();

    // A query that fails inside rolls everything back and arrives translated.
    await expect(
      db.tx(async (tx) => {
        await tx.query('INSERT INTO t (id) VALUES ($1)', ['tx3']);
        await tx.query('INSERT INTO t (id) VALUES ($1)', ['tx3']);
      }),
    ).rejects.toMatchObject({ code: 'STORE_FAILED', data: { pgCode: '23505', constraint: 't_pkey' } });
    expect(await db.one('SELECT id FROM t WHERE id = $1', ['tx3'])).toBeUndefined();
  });

  it('refuses a query on a transaction handle after the transaction ended', async () => {
    let leaked: Parameters<Parameters<PgDatabase['tx']>[0]>[0] | undefined;
    await db.tx(async (tx) => {
      leaked = tx;
    });
    await expect(leaked?.query('SELECT 1')).rejects.toMatchObject({
      code: 'STORE_FAILED',
      message: expect.stringMatching(/after its transaction ended/),
    });
  });

  it('translates errors into STORE_FAILED with the SQLSTATE and the cause', async () => {
    const error = (await db.query('SELEC 1').catch((e: unknown) => e)) as SandboxError;
    expect(error).toMatchObject({
      code: 'STORE_FAILED',
      message: expect.stringMatching(/^store: query "SELEC 1" failed: syntax error/),
      data: { pgCode: '42601' },
    });
    expect(error.cause).toBeInstanceOf(pg.DatabaseError);
  });

  it('says where to look when the server cannot be reached', async () => {
    const nowhere = openPgDatabase({ url: 'postgres://postgres@localhost/x?host=%2Fnonexistent-dsh-dir' });
    opened.push(nowhere);
    await expect(nowhere.query('SELECT 1')).rejects.toMatchObject({
      code: 'STORE_FAILED',
      message: expect.stringMatching(/is PostgreSQL running/),
      data: { errno: 'ENOENT' },
    });
    await expect(nowhere.tx(async () => 1)).rejects.toMatchObject({ code: 'STORE_FAILED' });
  });

  it('refuses urls that are not postgres:// and pool sizes below one, before any I/O', () => {
    for (const url of ['file:/tmp/x.db', 'mysql://h/db', '/tmp/x.db']) {
      expect(() => openPgDatabase({ url })).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
    }
    expect(() => openPgDatabase({ url: database.url, poolSize: 0 })).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID' }),
    );
    expect(
      openPgDatabase({ url: database.url.replace('postgres:', 'postgresql:'), poolSize: 3 }).pool.options.max,
    ).toBe(3);
  });

  it('names its connections: dsh-sandbox by default, the url or the option otherwise', async () => {
    const name = async (one: PgDatabase) =>
      (await one.one<{ n: string }>("SELECT current_setting('application_name') AS n"))?.n;
    expect(await name(db)).toBe('dsh-sandbox');
    expect(await name(open({ url: `${database.url}&application_name=from-url` }))).toBe('from-url');
    expect(
      await name(open({ url: `${database.url}&application_name=from-url`, applicationName: 'opt' })),
    ).toBe('opt');
  });

  it("takes TLS from the url's sslmode, and the ssl option over it", async () => {
    // The test cluster speaks no TLS: a url that asks for it fails, the option turns it off again.
    const wantsTls = `${database.url}&sslmode=verify-full`;
    await expect(open({ url: wantsTls }).query('SELECT 1')).rejects.toMatchObject({
      code: 'STORE_FAILED',
      message: expect.stringMatching(/SSL/i),
    });
    expect(await open({ url: wantsTls, ssl: false }).one('SELECT 1 AS one')).toEqual({ one: 1 });
  });

  it('reports a pooled connection that dies while idle to onError instead of crashing', async () => {
    const errors: SandboxError[] = [];
    const one = open({ onError: (e) => errors.push(e) });
    const pid = (await one.one<{ p: number }>('SELECT pg_backend_pid() AS p'))?.p;
    await db.query('SELECT pg_terminate_backend($1)', [pid]);
    await until(() => errors.length > 0, { what: 'the idle connection error' });
    expect(errors[0]).toMatchObject({ code: 'STORE_FAILED' });
    expect(await one.one('SELECT 1 AS one')).toEqual({ one: 1 }); // the pool replaced it
  });

  it('runs on a private cluster: a unix socket in its own directory, no TCP', async () => {
    expect(await db.one("SELECT current_setting('listen_addresses') AS l")).toEqual({ l: '' });
    expect(database.url).toMatch(/\?host=%2F/);
  });

  it('closes idempotently', async () => {
    const one = openPgDatabase({ url: database.url });
    await one.one('SELECT 1');
    await Promise.all([one.close(), one.close()]);
    await one.close();
  });
});
