// The replicas port on PostgreSQL (../leases-port.ts): `replicas` (who runs, and how to reach it)
// and `family_leases` (who owns each agent family, until when, in which epoch), made by migration 18.
// Invariants: every decision is one statement, so two replicas racing for a family settle it on the
// row lock (the second sees the first's lease); expiry is judged by the database's clock
// (clock_timestamp(), not a replica's); the epoch grows whenever the family changes hands or is
// taken again after its lease ran out, never on the holder's renewal. A lease ended on purpose
// (release, retire, a restart retiring the earlier process) has expires_at 0, one that ran out a
// time of the clock: a late renewal keeps the second kind only (leases-port.ts).
import type { Acquired, FamilyLease, HeldFamily, LeaseStore, ReplicaInfo } from '../leases-port.ts';
import { type PgDatabase, pgGuarded } from './db.ts';

interface LeaseRow {
  family_id: string;
  replica_id: string;
  epoch: string | number;
  url: string | null;
  expired: boolean;
}

const toLease = (r: LeaseRow): FamilyLease => ({
  familyId: r.family_id,
  replicaId: r.replica_id,
  epoch: Number(r.epoch),
  url: r.url ?? undefined,
  expired: r.expired,
});

/** The database's clock in milliseconds since the epoch (every lease time is one of these). */
const NOW_MS = '(extract(epoch from clock_timestamp()) * 1000)::bigint';
/** The expiry of a lease ended on purpose: expired, and never kept by a late renewal. */
const ENDED = '0';

const LEASE = `SELECT l.family_id, l.replica_id, l.epoch, r.url, l.expires_at <= ${NOW_MS} AS expired
  FROM family_leases l LEFT JOIN replicas r ON r.id = l.replica_id WHERE l.family_id = $1`;

export const createPgLeaseStore = (db: PgDatabase): LeaseStore => ({
  register: (replica: ReplicaInfo, replicaId?: string) =>
    pgGuarded('register the replica', async () => {
      if (replicaId !== undefined) {
        // Earlier processes of this replica: `<replicaId>:<start>` holders other than this one.
        const earlier = `left(replica_id, length($1) + 1) = $1 || ':' AND replica_id <> $2`;
        await db.tx(async (q) => {
          await q.query(`UPDATE family_leases SET expires_at = ${ENDED} WHERE ${earlier}`, [
            replicaId,
            replica.id,
          ]);
          await q.query(`DELETE FROM replicas WHERE left(id, length($1) + 1) = $1 || ':' AND id <> $2`, [
            replicaId,
            replica.id,
          ]);
        });
      }
      await db.query(
        `INSERT INTO replicas (id, url, started_at, heartbeat_at) VALUES ($1, $2, ${NOW_MS}, ${NOW_MS})
         ON CONFLICT (id) DO UPDATE SET url = excluded.url, heartbeat_at = ${NOW_MS}`,
        [replica.id, replica.url],
      );
    }),

  retire: (replicaId) =>
    pgGuarded('retire the replica', async () => {
      await db.tx(async (q) => {
        await q.query(
          `UPDATE family_leases SET expires_at = ${ENDED}
           WHERE replica_id = $1`,
          [replicaId],
        );
        await q.query('DELETE FROM replicas WHERE id = $1', [replicaId]);
      });
    }),

  acquire: (familyId, replicaId, ttlMs) =>
    pgGuarded('take a family lease', async (): Promise<Acquired> => {
      const taken = await db.one<{ epoch: string | number }>(
        `INSERT INTO family_leases AS l (family_id, replica_id, epoch, expires_at)
         VALUES ($1, $2, 1, ${NOW_MS} + $3)
         ON CONFLICT (family_id) DO UPDATE SET
           epoch = CASE WHEN l.replica_id = excluded.replica_id AND l.expires_at > ${NOW_MS}
                        THEN l.epoch ELSE l.epoch + 1 END,
           replica_id = excluded.replica_id,
           expires_at = excluded.expires_at
         WHERE l.replica_id = excluded.replica_id OR l.expires_at <= ${NOW_MS}
         RETURNING l.epoch`,
        [familyId, replicaId, ttlMs],
      );
      if (taken !== undefined) return { held: true, epoch: Number(taken.epoch) };
      const row = await db.one<LeaseRow>(LEASE, [familyId]);
      // Gone between the two statements (a release races us): the next call takes it.
      if (row === undefined)
        return {
          held: false,
          lease: { familyId, replicaId: '', epoch: 0, url: undefined, expired: true },
        };
      return { held: false, lease: toLease(row) };
    }),

  renew: (replicaId, ttlMs, holding = []) =>
    pgGuarded('renew the family leases', async (): Promise<HeldFamily[]> => {
      // Still its own in the epoch it holds means nobody took it since: a late renewal keeps it.
      const rows = await db.many<{ family_id: string; epoch: string | number }>(
        `WITH beat AS (UPDATE replicas SET heartbeat_at = ${NOW_MS} WHERE id = $1)
         UPDATE family_leases SET expires_at = ${NOW_MS} + $2
         WHERE replica_id = $1 AND (expires_at > ${NOW_MS} OR (expires_at <> ${ENDED}
           AND (family_id, epoch) IN (SELECT * FROM unnest($3::text[], $4::bigint[]))))
         RETURNING family_id, epoch`,
        [replicaId, ttlMs, holding.map((h) => h.familyId), holding.map((h) => h.epoch)],
      );
      return rows.map((r) => ({ familyId: r.family_id, epoch: Number(r.epoch) }));
    }),

  drop: (familyId, replicaId) =>
    pgGuarded('drop a family lease', async () => {
      await db.query('DELETE FROM family_leases WHERE family_id = $1 AND replica_id = $2', [
        familyId,
        replicaId,
      ]);
    }),

  release: (familyId, replicaId) =>
    pgGuarded('release a family lease', async () => {
      const { rowCount } = await db.query(
        `UPDATE family_leases SET expires_at = ${ENDED}
         WHERE family_id = $1 AND replica_id = $2 AND expires_at > ${NOW_MS}`,
        [familyId, replicaId],
      );
      return rowCount > 0;
    }),

  alive: (replicaId, withinMs) =>
    pgGuarded('read a replica', async () => {
      const row = await db.one(
        `SELECT 1 AS x FROM replicas WHERE id = $1 AND heartbeat_at > ${NOW_MS} - $2`,
        [replicaId, withinMs],
      );
      return row !== undefined;
    }),

  leases: (familyIds) =>
    pgGuarded('read family leases', async () =>
      (
        await db.many<LeaseRow>(
          `SELECT l.family_id, l.replica_id, l.epoch, r.url, l.expires_at <= ${NOW_MS} AS expired
           FROM family_leases l LEFT JOIN replicas r ON r.id = l.replica_id WHERE l.family_id = ANY($1)`,
          [familyIds],
        )
      ).map(toLease),
    ),

  lease: (familyId) =>
    pgGuarded('read a family lease', async () => {
      const row = await db.one<LeaseRow>(LEASE, [familyId]);
      return row === undefined ? undefined : toLease(row);
    }),
});

/**
 * The fence of one event write (pg/event-log.ts runs it first in the write's transaction): the
 * families of `tokens` this replica still holds in exactly those epochs, their rows locked FOR SHARE
 * until the write commits, so a replica taking one of them over waits for this write and then
 * sees it. A family missing from the answer is lost: the write must not happen.
 */
export const heldFamilies = async (
  q: Pick<PgDatabase, 'many'>,
  replicaId: string,
  tokens: readonly HeldFamily[],
): Promise<Set<string>> => {
  const rows = await q.many<{ family_id: string }>(
    `SELECT family_id FROM family_leases
     WHERE replica_id = $1 AND expires_at > ${NOW_MS}
       AND (family_id, epoch) IN (SELECT * FROM unnest($2::text[], $3::bigint[]))
     ORDER BY family_id FOR SHARE`,
    [replicaId, tokens.map((t) => t.familyId), tokens.map((t) => t.epoch)],
  );
  return new Set(rows.map((r) => r.family_id));
};
