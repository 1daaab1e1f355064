// Each tenant's egress settings on PostgreSQL: the EgressSettingsStore of ../egress.ts over the
// same rows (`tenant_egress`: one JSON document per tenant; `tenant_egress_ca`: its interception
// CA), both stored sealed (../sealed.ts) when a sealer is given, byte for byte what libsql stores,
// so either backend opens the other's values under the same key. Invariants, as on libsql: a
// document changes only whole; update() reads and writes it in one transaction; the first CA a
// tenant gets is the one it keeps.
// Where Postgres differs, and why: libsql's update runs under BEGIN IMMEDIATE (one writer for the
// whole file). Here a tenant that has no document yet has no row to lock, so update() and put()
// take a transaction-scoped advisory lock on the tenant's document (a hash of 'egress:' and the
// tenant id) before reading: one tenant's writes queue across replicas, others' do not.
// putCaOnce is INSERT … ON CONFLICT DO NOTHING then, when it inserted nothing, a read in a
// statement of its own: under READ COMMITTED the insert waits for a concurrent first writer's
// COMMIT, and the later statement's snapshot sees that writer's row (one statement with both
// would read the snapshot from before it).
import type { JsonValue } from '../../json.ts';
import type { EgressCa, EgressSettingsStore } from '../egress.ts';
import { type Sealer, sealedJson } from '../sealed.ts';
import { type PgDatabase, type PgQueries, pgGuarded } from './db.ts';

const lockDocument = async (tx: PgQueries, tenantId: string): Promise<void> => {
  await tx.query("SELECT pg_advisory_xact_lock(hashtextextended('egress:' || $1, 0))", [tenantId]);
};

export const createPgEgressSettingsStore = (
  db: PgDatabase,
  now: () => number = Date.now,
  sealer?: Sealer,
): EgressSettingsStore => {
  const json = sealedJson(sealer);

  const read = async (q: PgQueries, tenantId: string): Promise<JsonValue | undefined> => {
    const row = await q.one<{ settings: string }>('SELECT settings FROM tenant_egress WHERE tenant_id = $1', [
      tenantId,
    ]);
    return row === undefined ? undefined : json.open<JsonValue>(row.settings);
  };

  const write = async (q: PgQueries, tenantId: string, settings: JsonValue): Promise<void> => {
    await q.query(
      `INSERT INTO tenant_egress (tenant_id, settings, updated_at) VALUES ($1, $2, $3)
       ON CONFLICT (tenant_id) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at`,
      [tenantId, json.seal(settings), now()],
    );
  };

  const readCa = async (q: PgQueries, tenantId: string): Promise<EgressCa | undefined> => {
    const row = await q.one<{ ca: string }>('SELECT ca FROM tenant_egress_ca WHERE tenant_id = $1', [
      tenantId,
    ]);
    return row === undefined ? undefined : json.open<EgressCa>(row.ca);
  };

  return {
    get: (tenantId) => pgGuarded('read egress settings', () => read(db, tenantId)),

    put: (tenantId, settings) =>
      pgGuarded('write egress settings', () =>
        db.tx(async (tx) => {
          await lockDocument(tx, tenantId);
          await write(tx, tenantId, settings);
        }),
      ),

    update: (tenantId, fn) =>
      pgGuarded('update egress settings', () =>
        db.tx(async (tx) => {
          await lockDocument(tx, tenantId);
          const next = fn(await read(tx, tenantId));
          await write(tx, tenantId, next);
          return next;
        }),
      ),

    getCa: (tenantId) => pgGuarded('read the egress CA', () => readCa(db, tenantId)),

    putCaOnce: (tenantId, ca) =>
      pgGuarded('write the egress CA', () =>
        db.tx(async (tx) => {
          const { rowCount } = await tx.query(
            `INSERT INTO tenant_egress_ca (tenant_id, ca, created_at) VALUES ($1, $2, $3)
             ON CONFLICT (tenant_id) DO NOTHING`,
            [tenantId, json.seal({ certPem: ca.certPem, keyPem: ca.keyPem }), now()],
          );
          if (rowCount > 0) return { certPem: ca.certPem, keyPem: ca.keyPem };
          return (await readCa(tx, tenantId)) ?? ca;
        }),
      ),
  };
};
