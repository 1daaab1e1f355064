// Tenants and their API keys. Invariants: a raw key (`dsk_` + 40 base64url chars, 240 random bits)
// exists only in the value returned at creation; the database holds its SHA-256 and a short
// non-secret prefix used to find candidate rows; verification compares hashes in constant time
// (crypto.timingSafeEqual) and ignores revoked and expired keys and keys of a tenant that is not
// active. A tenant's deletion (beginDeletion) revokes every key of it in the write that marks it
// `deleting`, so no key of a deleting tenant is ever live. Making a key deletes the tenant's ended
// keys past MAX_ENDED_KEYS in the same transaction (tenant-keys.ts).
// Every method that reads or writes returns a Promise (the port a network database can implement);
// this libsql implementation runs its prepared statements synchronously inside them, a transaction
// never spans an await. A key that is not remembered costs one read (the key joined with its
// tenant). Verified keys are remembered by their SHA-256 for `keyCacheMs` (2 s, never past their
// expiry), so a request costs a hash and no read. Revocation: revokeKey() through this store forgets the key at once (this
// process answers 401 from the next request); a key revoked by another process on the same
// database stops working here at once when both hear the same wake-up bus (PostgreSQL, tenant-keys.ts),
// else within keyCacheMs. Only valid keys are remembered, at most
// KEY_CACHE_MAX of them. What both backends share (key shape, hashing, the cache, the errors, the
// last-key rule) lives in tenant-keys.ts; this module keeps the libsql statements.
// The port's types are in tenants-port.ts (re-exported here).
import { type Database, guarded, immediate } from './db.ts';
import {
  type CandidateRow,
  candidatesSql,
  checkKeyOptions,
  checkKeyRoom,
  checkTenantName,
  createKeyVerifier,
  KEY_COLUMNS,
  type KeyRow,
  keyInfoOf,
  keyPageOf,
  keyPageParams,
  keyPageSql,
  keysToPrune,
  newApiKey,
  newTenant,
  noTenant,
  QUOTAS_SQL,
  quotaRowOf,
  quotasJson,
  revokeDecision,
  TENANT_COLUMNS,
  type TenantRow,
  tenantInfoOf,
} from './tenant-keys.ts';
import type { CreatedKey, KeyOptions, KeyPage, TenantStore } from './tenants-port.ts';
import type { WakeBus } from './wake-port.ts';

export {
  API_KEY_PREFIX,
  KEY_CACHE_MAX,
  KEY_PAGE_DEFAULT,
  KEY_PAGE_MAX,
  KEY_SHAPE,
  MAX_ENDED_KEYS,
  PREFIX_LENGTH,
} from './tenant-keys.ts';
export type {
  ApiKeyInfo,
  CreatedKey,
  KeyCursor,
  KeyOptions,
  KeyPage,
  KeyPageResult,
  RevokeOutcome,
  Tenant,
  TenantInfo,
  TenantState,
  TenantStore,
} from './tenants-port.ts';

export interface TenantStoreOptions {
  /** How long a verified key is trusted without reading the database again. Default 2000; 0 reads every time. */
  keyCacheMs?: number;
  /** Where revocations are announced to, and heard from, other processes (tenant-keys.ts). Default: none. */
  wake?: WakeBus;
}

/** The prepared statements of the store (made once per database handle). */
const statements = (db: Database) => {
  const insertTenant = db.prepare('INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?)');
  const insertKey = db.prepare(
    'INSERT INTO api_keys (id, tenant_id, hash, prefix, created_at, name, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const selectTenant = db.prepare(`SELECT ${TENANT_COLUMNS} FROM tenants WHERE id = ?`);
  const selectTenants = db.prepare(`SELECT ${TENANT_COLUMNS} FROM tenants ORDER BY created_at, rowid`);
  const keysByPrefix = db.prepare(candidatesSql('?'));
  const keysByTenant = db.prepare(
    `SELECT ${KEY_COLUMNS} FROM api_keys WHERE tenant_id = ? ORDER BY created_at, rowid`,
  );
  const keyPage = db.prepare(keyPageSql((n) => `?${n}`));
  const pruneKeys = db.prepare(
    'DELETE FROM api_keys WHERE tenant_id = ? AND id IN (SELECT value FROM json_each(?))',
  );
  const revoke = db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL');
  const revokeAll = db.prepare(
    'UPDATE api_keys SET revoked_at = ? WHERE tenant_id = ? AND revoked_at IS NULL RETURNING id',
  );
  const markDeleting = db.prepare(
    "UPDATE tenants SET state = 'deleting', deleting_since = ? WHERE id = ? AND state = 'active'",
  );
  const markDeleted = db.prepare(
    "UPDATE tenants SET state = 'deleted', deleted_at = ? WHERE id = ? AND state = 'deleting'",
  );
  const updateQuotas = db.prepare("UPDATE tenants SET quotas = ? WHERE id = ? AND state != 'deleted'");
  const selectDeleting = db.prepare(
    "SELECT id FROM tenants WHERE state = 'deleting' ORDER BY deleting_since, rowid",
  );
  const selectQuotas = db.prepare(QUOTAS_SQL);

  return {
    insertTenant,
    insertKey,
    selectTenant,
    selectTenants,
    keysByPrefix,
    keysByTenant,
    keyPage,
    pruneKeys,
    revokeAll,
    markDeleting,
    markDeleted,
    updateQuotas,
    selectDeleting,
    revoke,
    selectQuotas,
  };
};

/**
 * Makes a key inside its caller's transaction, so the bound on live keys counts every key made
 * before; the ended keys past MAX_ENDED_KEYS go in the same write (tenant-keys.ts, keysToPrune).
 */
function addKeyIn(
  sql: ReturnType<typeof statements>,
  at: number,
  tenantId: string,
  key: KeyOptions,
): CreatedKey {
  const keys = sql.keysByTenant.all(tenantId) as KeyRow[];
  checkKeyRoom(keys, at);
  const pruned = keysToPrune(keys, at);
  if (pruned.length > 0) sql.pruneKeys.run(tenantId, JSON.stringify(pruned));
  const { keyId, apiKey, hash, prefix } = newApiKey();
  sql.insertKey.run(keyId, tenantId, hash, prefix, at, key.name ?? null, key.expiresAt ?? null);
  return { keyId, apiKey };
}

/** One page of a tenant's keys (tenant-keys.ts, keyPageSql). */
const keyPageIn = (sql: ReturnType<typeof statements>, tenantId: string, page: KeyPage) =>
  guarded('list api keys', () =>
    keyPageOf(sql.keyPage.all(...keyPageParams(tenantId, page)) as KeyRow[], page),
  );

export const createTenantStore = (
  db: Database,
  now: () => number = Date.now,
  options: TenantStoreOptions = {},
): TenantStore => {
  const keyCacheMs = options.keyCacheMs ?? 2000;
  const verifier = createKeyVerifier(now, keyCacheMs, options.wake);
  const sql = statements(db);

  const getTenant = (id: string) =>
    guarded('read tenant', () => {
      const row = sql.selectTenant.all(id)[0] as TenantRow | undefined;
      return row === undefined ? undefined : tenantInfoOf(row);
    });

  const addKey = (tenantId: string, key: KeyOptions): CreatedKey => addKeyIn(sql, now(), tenantId, key);

  /** Forgets the keys here and tells the other processes (after the write that revoked them). */
  const revoked = async (keyIds: readonly string[]): Promise<void> => {
    // Every one forgotten before the first announcement is awaited: none is served meanwhile.
    for (const keyId of keyIds) verifier.revoked(keyId);
    for (const keyId of keyIds) await verifier.announce(keyId);
  };

  return {
    async createTenant(name, key = {}) {
      checkTenantName(name);
      checkKeyOptions(key, now());
      return guarded('create tenant', () =>
        immediate(db, () => {
          const tenant = newTenant(name, now());
          sql.insertTenant.run(tenant.id, tenant.name, tenant.createdAt);
          return { ...tenant, ...addKey(tenant.id, key) };
        }),
      );
    },

    getTenant: async (id) => getTenant(id),

    listTenants: async () =>
      guarded('list tenants', () => (sql.selectTenants.all() as TenantRow[]).map(tenantInfoOf)),

    async createKey(tenantId, options = {}) {
      checkKeyOptions(options, now());
      return guarded('create api key', () =>
        immediate(db, () => {
          if (getTenant(tenantId)?.state !== 'active') throw noTenant(tenantId);
          return addKey(tenantId, options);
        }),
      );
    },

    listKeys: async (tenantId) =>
      guarded('list api keys', () => (sql.keysByTenant.all(tenantId) as KeyRow[]).map(keyInfoOf)),

    listKeyPage: async (tenantId, page) => keyPageIn(sql, tenantId, page),

    verifyKey: (apiKey) =>
      verifier.verify(apiKey, (prefix) =>
        guarded('verify api key', () => sql.keysByPrefix.all(prefix) as CandidateRow[]),
      ),

    async revokeKey(keyId) {
      verifier.forget(keyId);
      const done = guarded('revoke api key', () => sql.revoke.run(now(), keyId).changes > 0);
      if (done) await revoked([keyId]);
      return done;
    },

    async revokeTenantKey(tenantId, keyId, options = {}) {
      const outcome = guarded('revoke api key', () =>
        immediate(db, () => {
          const at = now();
          const decision = revokeDecision(
            sql.keysByTenant.all(tenantId) as KeyRow[],
            keyId,
            at,
            options.allowLast === true,
          );
          if (decision === 'revoke') sql.revoke.run(at, keyId);
          return decision === 'revoke' ? 'revoked' : decision;
        }),
      );
      if (outcome === 'revoked') await revoked([keyId]);
      return outcome;
    },

    async beginDeletion(tenantId) {
      const keyIds = guarded('begin tenant deletion', () =>
        immediate(db, () => {
          const at = now();
          if (sql.markDeleting.run(at, tenantId).changes === 0) return [];
          return (sql.revokeAll.all(at, tenantId) as { id: string }[]).map((r) => r.id);
        }),
      );
      await revoked(keyIds);
      return getTenant(tenantId);
    },

    async finishDeletion(tenantId) {
      guarded('finish tenant deletion', () => sql.markDeleted.run(now(), tenantId));
    },

    async setQuotas(tenantId, quotas) {
      const json = quotasJson(quotas);
      const changed = guarded('set tenant quotas', () => sql.updateQuotas.run(json, tenantId).changes > 0);
      return changed ? getTenant(tenantId) : undefined;
    },

    listDeleting: async () =>
      guarded('list deleting tenants', () => (sql.selectDeleting.all() as { id: string }[]).map((r) => r.id)),

    listQuotas: async () =>
      guarded('list tenant quotas', () =>
        (sql.selectQuotas.all() as { id: string; quotas: string }[]).map(quotaRowOf),
      ),
  };
};
