// Tenants and their API keys on PostgreSQL: the TenantStore of ../tenants.ts, the same
// invariants, the same rows (pg/baseline.ts). A raw key exists only in the value returned at
// creation; the database holds its SHA-256 and the short non-secret prefix that finds candidate
// rows; verification compares hashes in constant time and ignores revoked keys. A key that is not
// remembered costs one read (the key joined with its tenant); a verified key is remembered by its
// SHA-256 for `keyCacheMs` (2 s). Revocation through this store forgets the key at once, also
// against a check whose read was in flight during it (it is not remembered); a key
// revoked by another replica on the same database stops working here at once (the `key` wake-up,
// ../tenant-keys.ts), or within keyCacheMs while this replica's bus is not listening. Only
// valid keys are remembered, at most KEY_CACHE_MAX of them. A tenant and its first key are made in
// one transaction.
// The key's shape, prefix and hash, the key cache and the errors are ../tenant-keys.ts's, shared
// with the libsql backend, so a key made on one backend verifies on the other.

import {
  type CandidateRow,
  checkTenantName,
  createKeyVerifier,
  type KeyRow,
  keyInfoOf,
  newApiKey,
  newTenant,
  noTenant,
} from '../tenant-keys.ts';
import type { CreatedKey, Tenant, TenantStore, TenantStoreOptions } from '../tenants.ts';
import { type PgDatabase, type PgQueries, pgGuarded } from './db.ts';

const TENANT = 'id, name, created_at AS "createdAt"';

export const createPgTenantStore = (
  db: PgDatabase,
  now: () => number = Date.now,
  options: TenantStoreOptions = {},
): TenantStore => {
  const keyCacheMs = options.keyCacheMs ?? 2000;
  const verifier = createKeyVerifier(now, keyCacheMs, options.wake);

  const getTenant = (id: string): Promise<Tenant | undefined> =>
    pgGuarded('read tenant', () => db.one<Tenant>(`SELECT ${TENANT} FROM tenants WHERE id = $1`, [id]));

  const addKey = async (q: PgQueries, tenantId: string): Promise<CreatedKey> => {
    const { keyId, apiKey, hash, prefix } = newApiKey();
    await q.query(
      'INSERT INTO api_keys (id, tenant_id, hash, prefix, created_at) VALUES ($1, $2, $3, $4, $5)',
      [keyId, tenantId, hash, prefix, now()],
    );
    return { keyId, apiKey };
  };

  return {
    async createTenant(name) {
      checkTenantName(name);
      return pgGuarded('create tenant', () =>
        db.tx(async (tx) => {
          const tenant = newTenant(name, now());
          await tx.query('INSERT INTO tenants (id, name, created_at) VALUES ($1, $2, $3)', [
            tenant.id,
            tenant.name,
            tenant.createdAt,
          ]);
          return { ...tenant, ...(await addKey(tx, tenant.id)) };
        }),
      );
    },

    getTenant,

    listTenants: () =>
      pgGuarded('list tenants', () =>
        db.many<Tenant>(`SELECT ${TENANT} FROM tenants ORDER BY created_at, rowid`),
      ),

    async createKey(tenantId) {
      if ((await getTenant(tenantId)) === undefined) throw noTenant(tenantId);
      return pgGuarded('create api key', () => addKey(db, tenantId));
    },

    listKeys: (tenantId) =>
      pgGuarded('list api keys', async () =>
        (
          await db.many<KeyRow>(
            'SELECT id, tenant_id, prefix, created_at, revoked_at FROM api_keys WHERE tenant_id = $1 ORDER BY created_at, rowid',
            [tenantId],
          )
        ).map(keyInfoOf),
      ),

    verifyKey: (apiKey) =>
      verifier.verify(apiKey, (prefix) =>
        pgGuarded('verify api key', () =>
          db.many<CandidateRow>(
            `SELECT k.id, k.hash, t.id AS tenant_id, t.name AS tenant_name, t.created_at AS tenant_created_at
               FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
              WHERE k.prefix = $1 AND k.revoked_at IS NULL`,
            [prefix],
          ),
        ),
      ),

    async revokeKey(keyId) {
      verifier.forget(keyId);
      try {
        const { rowCount } = await pgGuarded('revoke api key', () =>
          db.query('UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [
            now(),
            keyId,
          ]),
        );
        if (rowCount > 0) await verifier.announce(keyId);
        return rowCount > 0;
      } finally {
        // A check that read the key while the UPDATE ran may have remembered it since.
        verifier.revoked(keyId);
      }
    },
  };
};
