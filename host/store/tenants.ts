// Tenants and their API keys. Invariants: a raw key (`dsk_` + 40 base64url chars, 240 random bits)
// exists only in the value returned at creation; the database holds its SHA-256 and a short
// non-secret prefix used to find candidate rows; verification compares hashes in constant time
// (crypto.timingSafeEqual) and ignores revoked keys.
// Every method that reads or writes returns a Promise (the port a network database can implement);
// this libsql implementation runs its prepared statements synchronously inside them, a transaction
// never spans an await. A key that is not remembered costs one read (the key joined with its
// tenant). Verified keys are remembered by their SHA-256 for `keyCacheMs` (2 s), so a request costs
// a hash and no read. Revocation: revokeKey() through this store forgets the key at once (this
// process answers 401 from the next request); a key revoked by another process on the same
// database stops working here at once when both hear the same wake-up bus (PostgreSQL, tenant-keys.ts),
// else within keyCacheMs. Only valid keys are remembered, at most
// KEY_CACHE_MAX of them. What both backends share (key shape, hashing, the cache, the errors)
// lives in tenant-keys.ts; this module keeps the libsql statements.
// The port's types are in tenants-port.ts (re-exported here).
import { type Database, guarded, immediate } from './db.ts';
import {
  type CandidateRow,
  checkTenantName,
  createKeyVerifier,
  type KeyRow,
  keyInfoOf,
  newApiKey,
  newTenant,
  noTenant,
} from './tenant-keys.ts';
import type { CreatedKey, Tenant, TenantStore } from './tenants-port.ts';
import type { WakeBus } from './wake-port.ts';

export { API_KEY_PREFIX, KEY_CACHE_MAX, KEY_SHAPE, PREFIX_LENGTH } from './tenant-keys.ts';
export type { ApiKeyInfo, CreatedKey, Tenant, TenantStore } from './tenants-port.ts';

export interface TenantStoreOptions {
  /** How long a verified key is trusted without reading the database again. Default 2000; 0 reads every time. */
  keyCacheMs?: number;
  /** Where revocations are announced to, and heard from, other processes (tenant-keys.ts). Default: none. */
  wake?: WakeBus;
}

export const createTenantStore = (
  db: Database,
  now: () => number = Date.now,
  options: TenantStoreOptions = {},
): TenantStore => {
  const keyCacheMs = options.keyCacheMs ?? 2000;
  const verifier = createKeyVerifier(now, keyCacheMs, options.wake);
  const insertTenant = db.prepare('INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?)');
  const insertKey = db.prepare(
    'INSERT INTO api_keys (id, tenant_id, hash, prefix, created_at) VALUES (?, ?, ?, ?, ?)',
  );
  const selectTenant = db.prepare('SELECT id, name, created_at AS createdAt FROM tenants WHERE id = ?');
  const selectTenants = db.prepare(
    'SELECT id, name, created_at AS createdAt FROM tenants ORDER BY created_at, rowid',
  );
  const keysByPrefix = db.prepare(
    `SELECT k.id, k.hash, t.id AS tenant_id, t.name AS tenant_name, t.created_at AS tenant_created_at
       FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
      WHERE k.prefix = ? AND k.revoked_at IS NULL`,
  );
  const keysByTenant = db.prepare('SELECT * FROM api_keys WHERE tenant_id = ? ORDER BY created_at, rowid');
  const revoke = db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL');

  const getTenant = (id: string) =>
    guarded('read tenant', () => selectTenant.all(id)[0] as Tenant | undefined);

  const addKey = (tenantId: string): CreatedKey => {
    const { keyId, apiKey, hash, prefix } = newApiKey();
    insertKey.run(keyId, tenantId, hash, prefix, now());
    return { keyId, apiKey };
  };

  return {
    async createTenant(name) {
      checkTenantName(name);
      return guarded('create tenant', () =>
        immediate(db, () => {
          const tenant = newTenant(name, now());
          insertTenant.run(tenant.id, tenant.name, tenant.createdAt);
          return { ...tenant, ...addKey(tenant.id) };
        }),
      );
    },

    getTenant: async (id) => getTenant(id),

    listTenants: async () => guarded('list tenants', () => selectTenants.all() as Tenant[]),

    async createKey(tenantId) {
      if (getTenant(tenantId) === undefined) throw noTenant(tenantId);
      return guarded('create api key', () => addKey(tenantId));
    },

    listKeys: async (tenantId) =>
      guarded('list api keys', () => (keysByTenant.all(tenantId) as KeyRow[]).map(keyInfoOf)),

    verifyKey: (apiKey) =>
      verifier.verify(apiKey, (prefix) =>
        guarded('verify api key', () => keysByPrefix.all(prefix) as CandidateRow[]),
      ),

    async revokeKey(keyId) {
      verifier.forget(keyId);
      const revoked = guarded('revoke api key', () => revoke.run(now(), keyId).changes > 0);
      if (revoked) await verifier.announce(keyId);
      return revoked;
    },
  };
};
