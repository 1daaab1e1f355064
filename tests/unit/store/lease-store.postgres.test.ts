// The family leases on PostgreSQL (host/store/pg/leases.ts), with the database's clock moved on
// by hand: "the lease ran out" is its expiry set into the past, as a holder stopped (SIGSTOP) or
// starved past its lease would find it. What the replicas rely on: a family stays with its live
// holder. A holder that resumes after another replica took its family never gets it back while
// that replica renews; a holder whose renewal came late, with nobody having taken the family
// meanwhile, keeps it in its epoch (before, it lost its own family and the resumed replica could
// take it back: the ping-pong seen in a CI run, A at epoch 3 while B held it, then B at 4); and a
// lease ended on purpose (released, retired) is never brought back by a renewal.
// Only PostgreSQL keeps leases: the embedded libsql store serves one process, which owns every family.
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { LeaseStore } from '../../../host/store/leases-port.ts';
import { openPgDatabase, type PgDatabase } from '../../../host/store/pg/db.ts';
import { openPgStore } from '../../../host/store/pg/index.ts';
import type { Store } from '../../../host/store/store.ts';
import { createDatabase, describePostgres, type TestDatabase } from '../../helpers/postgres.ts';

const KEY = Buffer.alloc(32, 7);
const TTL = 60_000;

describePostgres('LeaseStore on PostgreSQL: a family stays with its live holder', () => {
  let database: TestDatabase;
  let db: PgDatabase;
  const stores: Store[] = [];
  /** One replica's lease store (its own pool, as another process's). */
  const replica = async (id: string): Promise<LeaseStore> => {
    const store = await openPgStore({ url: database.url, secretsKey: KEY, eventBatchWindowMs: 0 });
    stores.push(store);
    await store.leases!.register({ id, url: `http://127.0.0.1:1/${id}` });
    return store.leases!;
  };
  /** The family's lease runs out by the database's clock (its holder was stopped past it). */
  const runOut = async (familyId: string) => {
    await db.query(
      'UPDATE family_leases SET expires_at = (extract(epoch from clock_timestamp()) * 1000)::bigint - 1 WHERE family_id = $1',
      [familyId],
    );
  };

  beforeEach(async () => {
    database = await createDatabase();
    await (await openPgStore({ url: database.url, secretsKey: KEY })).close(); // the schema
    db = openPgDatabase({ url: database.url, poolSize: 1 });
  });
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close().catch(() => undefined);
    await db.close();
    await database.drop();
  });

  it('a holder that resumes after another replica took its family does not get it back while that one renews', async () => {
    const a = await replica('a');
    const b = await replica('b');
    expect(await a.acquire('f', 'a', TTL)).toEqual({ held: true, epoch: 1 });
    await runOut('f'); // A stopped past its lease
    expect(await b.acquire('f', 'b', TTL)).toEqual({ held: true, epoch: 2 });
    // A resumes: its renewal (naming what it held) finds the family lost, and it cannot take it.
    expect(await a.renew('a', TTL, [{ familyId: 'f', epoch: 1 }])).toEqual([]);
    expect(await a.acquire('f', 'a', TTL)).toMatchObject({
      held: false,
      lease: { replicaId: 'b', epoch: 2 },
    });
    for (let i = 0; i < 3; i++) {
      expect(await b.renew('b', TTL, [{ familyId: 'f', epoch: 2 }])).toEqual([{ familyId: 'f', epoch: 2 }]);
      expect(await a.renew('a', TTL, [{ familyId: 'f', epoch: 1 }])).toEqual([]);
      expect(await a.acquire('f', 'a', TTL)).toMatchObject({
        held: false,
        lease: { replicaId: 'b', epoch: 2 },
      });
    }
    expect(await a.lease('f')).toMatchObject({ replicaId: 'b', epoch: 2, expired: false });
  });

  it('a live holder whose renewal came late keeps the family nobody took, in its epoch, and a resumed replica cannot take it', async () => {
    const a = await replica('a');
    const b = await replica('b');
    await a.acquire('f', 'a', TTL);
    await runOut('f');
    expect(await b.acquire('f', 'b', TTL)).toEqual({ held: true, epoch: 2 });
    // B is starved past its lease on a loaded machine; nobody took the family meanwhile.
    await runOut('f');
    expect(await b.renew('b', TTL, [{ familyId: 'f', epoch: 2 }])).toEqual([{ familyId: 'f', epoch: 2 }]);
    // A resumes now: the family is B's, live, in the same epoch.
    expect(await a.renew('a', TTL, [{ familyId: 'f', epoch: 1 }])).toEqual([]);
    expect(await a.acquire('f', 'a', TTL)).toMatchObject({
      held: false,
      lease: { replicaId: 'b', epoch: 2 },
    });
    // A renewal naming no family (or another epoch) revives nothing: only what the holder still holds.
    await runOut('f');
    expect(await b.renew('b', TTL)).toEqual([]);
    expect(await b.renew('b', TTL, [{ familyId: 'f', epoch: 1 }])).toEqual([]);
    // Once it ran out and nobody renewed it, whoever asks first takes it, one epoch up.
    expect(await a.acquire('f', 'a', TTL)).toEqual({ held: true, epoch: 3 });
    expect(await b.renew('b', TTL, [{ familyId: 'f', epoch: 2 }])).toEqual([]);
  });

  it('a lease ended on purpose is not brought back by a late renewal', async () => {
    const a = await replica('a');
    const b = await replica('b');
    const c = await replica('c');
    await b.acquire('f', 'b', TTL);
    await b.acquire('g', 'b', TTL);
    // A clean hand-off of f (or an abandoned takeover), then B's renewal that was already under way.
    expect(await b.release('f', 'b')).toBe(true);
    expect(
      await b.renew('b', TTL, [
        { familyId: 'f', epoch: 1 },
        { familyId: 'g', epoch: 1 },
      ]),
    ).toEqual([{ familyId: 'g', epoch: 1 }]);
    expect(await a.acquire('f', 'a', TTL)).toEqual({ held: true, epoch: 2 });
    // B retired (a clean stop, or its restart retiring it): its renewal still in flight keeps nothing.
    await b.retire('b');
    expect(await b.renew('b', TTL, [{ familyId: 'g', epoch: 1 }])).toEqual([]);
    expect(await c.acquire('g', 'c', TTL)).toEqual({ held: true, epoch: 2 });
  });
});
