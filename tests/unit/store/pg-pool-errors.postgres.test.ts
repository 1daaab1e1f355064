import { afterAll, beforeAll, expect, it } from 'vitest';
import { SandboxError } from '../../../host/errors.ts';
import type { PgDatabase } from '../../../host/store/pg/db.ts';
import { createStoreDatabase, describePostgres, type StoreDatabase } from '../../helpers/postgres.ts';

describePostgres('postgres pool under errors', () => {
  let database: StoreDatabase;
  let db: PgDatabase;
  beforeAll(async () => {
    database = await createStoreDatabase();
    db = database.open({ poolSize: 2 });
  });
  afterAll(() => database?.drop());

  const refused = async (work: () => Promise<unknown>) => {
    await expect(work()).rejects.toBeInstanceOf(SandboxError);
  };

  it('gives every connection back, whatever failed', async () => {
    const rounds = 60;
    const failures: Array<() => Promise<unknown>> = [
      () =>
        db.tx(async (tx) => {
          await tx.query('SELECT 1');
          throw new SandboxError('CONFLICT', 'fn changed its mind');
        }),
      () => db.tx((tx) => tx.query('SELECT * FROM no_such_table')),
      () => db.query('INSERT INTO meta (key, value) VALUES ($1, $2)', ['k', 'a\0b']),
      () => db.tx((tx) => tx.query('INSERT INTO meta (key, value) VALUES ($1, $2)', ['k2', 'a\0b'])),
      () => db.query('SELECT $1::int', ['not a number']),
    ];
    for (let round = 0; round < rounds; round++) {
      await Promise.all(failures.map((fail) => refused(fail)));
    }
    // A connection that dies inside a transaction: its ROLLBACK fails too, and the pool drops it.
    for (let round = 0; round < 10; round++) {
      await refused(() =>
        db.tx(async (tx) => {
          await tx.query('SELECT pg_terminate_backend(pg_backend_pid())');
        }),
      );
    }
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => db.one<{ n: number }>('SELECT $1::int8 AS n', [i])),
    );
    expect(answers.map((a) => a?.n)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(await db.tx(async (tx) => (await tx.one<{ n: number }>('SELECT 7::int8 AS n'))?.n)).toBe(7);
    expect(db.pool.totalCount).toBeLessThanOrEqual(2);
    expect(db.pool.waitingCount).toBe(0);
  });
});
