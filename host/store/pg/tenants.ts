// Tenants and their API keys on PostgreSQL: the TenantStore of ../tenants.ts, the same
// invariants, the same rows (pg/baseline.ts, migration 20). A raw key exists only in the value
// returned at creation; the database holds its SHA-256 and the short non-secret prefix that finds
// candidate rows; verification compares hashes in constant time and ignores revoked and expired
// keys and keys of a tenant that is not active. A key that is not remembered costs one read (the
// key joined with its tenant); a verified key is remembered by its SHA-256 for `keyCacheMs` (2 s,
// never past its expiry). Revocation through this store forgets the key at once, also against a
// check whose read was in flight during it (it is not remembered); a key revoked by another
// replica on the same database stops working here at once (the `key` wake-up,
// ../tenant-keys.ts), or within keyCacheMs while this replica's bus is not listening. Only valid
// keys are remembered, at most KEY_CACHE_MAX of them. A tenant and its first key are made in one
// transaction; a revocation of one of a tenant's keys, a key's creation and the start of a
// tenant's deletion lock the tenant's row, so the last-key rule holds against concurrent
// revocations and no key is added to a tenant being deleted. A key's creation also deletes the
// tenant's ended keys past MAX_ENDED_KEYS (../tenant-keys.ts).
// The key's shape, prefix and hash, the key cache, the last-key rule and the errors are
// ../tenant-keys.ts's, shared with the libsql backend, so a key made on one backend verifies on
// the other.

import {
  type CandidateRow,
  candidatesSql,
  checkKeyOptions,
  checkKeyRoom,
  checkTenantName,
  createKeyVerifier,
  KEY_COLUMNS,
  type KeyRow,
  type KeyVerifier,
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
} from '../tenant-keys.ts';
import type { CreatedKey, KeyOptions, TenantInfo, TenantStore, TenantStoreOptions } from '../tenants.ts';
import type { KeyPage, KeyPageResult, TenantQuotaRow } from '../tenants-port.ts';
import { type PgDatabase, type PgQueries, pgGuarded } from './db.ts';

const tenantOf = (q: PgQueries, id: string): Promise<TenantInfo | undefined> =>
  pgGuarded('read tenant', async () => {
    const row = await q.one<TenantRow>(`SELECT ${TENANT_COLUMNS} FROM tenants WHERE id = $1`, [id]);
    return row === undefined ? undefined : tenantInfoOf(row);
  });

const insertKey = async (
  q: PgQueries,
  tenantId: string,
  key: KeyOptions,
  at: number,
): Promise<CreatedKey> => {
  const { keyId, apiKey, hash, prefix } = newApiKey();
  await q.query(
    'INSERT INTO api_keys (id, tenant_id, hash, prefix, created_at, name, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
    [keyId, tenantId, hash, prefix, at, key.name ?? null, key.expiresAt ?? null],
  );
  return { keyId, apiKey };
};

const tenantQuotas = (q: PgQueries): Promise<TenantQuotaRow[]> =>
  pgGuarded('list tenant quotas', async () =>
    (await q.many<{ id: string; quotas: string }>(QUOTAS_SQL)).map(quotaRowOf),
  );

const deletingTenants = (q: PgQueries): Promise<string[]> =>
  pgGuarded('list deleting tenants', async () =>
    (
      await q.many<{ id: string }>(
        "SELECT id FROM tenants WHERE state = 'deleting' ORDER BY deleting_since, rowid",
      )
    ).map((r) => r.id),
  );

/** The tenant's state, its row locked until the transaction ends. */
const lockTenant = async (tx: PgQueries, id: string): Promise<string | undefined> =>
  (await tx.one<{ state: string }>('SELECT state FROM tenants WHERE id = $1 FOR UPDATE', [id]))?.state;

const keysOf = (q: PgQueries, tenantId: string): Promise<KeyRow[]> =>
  q.many<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE tenant_id = $1 ORDER BY created_at, rowid`, [
    tenantId,
  ]);

/** The page of listKeyPage() (tenant-keys.ts, keyPageSql). */
const KEY_PAGE_SQL = keyPageSql((n) => `$${n}`);

/** One page of a tenant's keys. */
const keyPage = (q: PgQueries, tenantId: string, page: KeyPage): Promise<KeyPageResult> =>
  pgGuarded('list api keys', async () =>
    keyPageOf(await q.many<KeyRow>(KEY_PAGE_SQL, keyPageParams(tenantId, page)), page),
  );

/**
 * Makes a key for an active tenant in `tx`, its row locked (the bound on live keys counts every
 * key made before), and deletes the ended keys past MAX_ENDED_KEYS in the same transaction
 * (tenant-keys.ts, keysToPrune).
 */
const addKeyIn = async (tx: PgQueries, tenantId: string, options: KeyOptions, now: () => number) => {
  if ((await lockTenant(tx, tenantId)) !== 'active') throw noTenant(tenantId);
  const keys = await keysOf(tx, tenantId);
  const at = now();
  checkKeyRoom(keys, at);
  const pruned = keysToPrune(keys, at);
  if (pruned.length > 0)
    await tx.query('DELETE FROM api_keys WHERE tenant_id = $1 AND id = ANY($2::text[])', [tenantId, pruned]);
  return insertKey(tx, tenantId, options, at);
};

/** Marks an active tenant deleting and revokes its keys (in `tx`); the ids revoked. */
const markDeleting = async (tx: PgQueries, tenantId: string, at: number): Promise<string[]> => {
  if ((await lockTenant(tx, tenantId)) !== 'active') return [];
  await tx.query("UPDATE tenants SET state = 'deleting', deleting_since = $1 WHERE id = $2", [at, tenantId]);
  const rows = await tx.many<{ id: string }>(
    'UPDATE api_keys SET revoked_at = $1 WHERE tenant_id = $2 AND revoked_at IS NULL RETURNING id',
    [at, tenantId],
  );
  return rows.map((r) => r.id);
};

/**
 * Runs a revocation of `keyIds`: they are forgotten before and after the write (a check that read
 * one while the UPDATE ran may have remembered it since), and those it revoked (`done`) are
 * announced to the other replicas once stored.
 */
const revokingWith =
  (verifier: KeyVerifier) =>
  async <T>(keyIds: readonly string[], write: () => Promise<{ result: T; done: string[] }>): Promise<T> => {
    for (const keyId of keyIds) verifier.forget(keyId);
    let done: string[] = [];
    try {
      const out = await write();
      done = out.done;
      return out.result;
    } finally {
      for (const keyId of keyIds) verifier.revoked(keyId);
      for (const keyId of done) verifier.revoked(keyId);
      for (const keyId of done) await verifier.announce(keyId);
    }
  };

export const createPgTenantStore = (
  db: PgDatabase,
  now: () => number = Date.now,
  options: TenantStoreOptions = {},
): TenantStore => {
  const keyCacheMs = options.keyCacheMs ?? 2000;
  const verifier = createKeyVerifier(now, keyCacheMs, options.wake);

  const getTenant = (id: string): Promise<TenantInfo | undefined> => tenantOf(db, id);
  const addKey = (q: PgQueries, tenantId: string, key: KeyOptions) => insertKey(q, tenantId, key, now());
  const revoking = revokingWith(verifier);

  return {
    async createTenant(name, key = {}) {
      checkTenantName(name);
      checkKeyOptions(key, now());
      return pgGuarded('create tenant', () =>
        db.tx(async (tx) => {
          const tenant = newTenant(name, now());
          await tx.query('INSERT INTO tenants (id, name, created_at) VALUES ($1, $2, $3)', [
            tenant.id,
            tenant.name,
            tenant.createdAt,
          ]);
          return { ...tenant, ...(await addKey(tx, tenant.id, key)) };
        }),
      );
    },

    getTenant: (id) => getTenant(id),

    listTenants: () =>
      pgGuarded('list tenants', async () =>
        (await db.many<TenantRow>(`SELECT ${TENANT_COLUMNS} FROM tenants ORDER BY created_at, rowid`)).map(
          tenantInfoOf,
        ),
      ),

    async createKey(tenantId, options = {}) {
      checkKeyOptions(options, now());
      return pgGuarded('create api key', () => db.tx((tx) => addKeyIn(tx, tenantId, options, now)));
    },

    listKeys: (tenantId) =>
      pgGuarded('list api keys', async () => (await keysOf(db, tenantId)).map(keyInfoOf)),

    listKeyPage: (tenantId, page) => keyPage(db, tenantId, page),

    verifyKey: (apiKey) =>
      verifier.verify(apiKey, (prefix) =>
        pgGuarded('verify api key', () => db.many<CandidateRow>(candidatesSql('$1'), [prefix])),
      ),

    revokeKey: (keyId) =>
      revoking([keyId], async () => {
        const { rowCount } = await pgGuarded('revoke api key', () =>
          db.query('UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [
            now(),
            keyId,
          ]),
        );
        return { result: rowCount > 0, done: rowCount > 0 ? [keyId] : [] };
      }),

    revokeTenantKey: (tenantId, keyId, options = {}) =>
      revoking([keyId], () =>
        pgGuarded('revoke api key', () =>
          db.tx(async (tx) => {
            await lockTenant(tx, tenantId);
            const at = now();
            const decision = revokeDecision(
              await keysOf(tx, tenantId),
              keyId,
              at,
              options.allowLast === true,
            );
            if (decision !== 'revoke') return { result: decision, done: [] };
            await tx.query('UPDATE api_keys SET revoked_at = $1 WHERE id = $2', [at, keyId]);
            return { result: 'revoked' as const, done: [keyId] };
          }),
        ),
      ),

    async beginDeletion(tenantId) {
      const live = (await keysOf(db, tenantId)).filter((k) => k.revoked_at === null).map((k) => k.id);
      await revoking(live, () =>
        pgGuarded('begin tenant deletion', () =>
          db.tx(async (tx) => ({ result: undefined, done: await markDeleting(tx, tenantId, now()) })),
        ),
      );
      return getTenant(tenantId);
    },

    async finishDeletion(tenantId) {
      await pgGuarded('finish tenant deletion', () =>
        db.query(
          "UPDATE tenants SET state = 'deleted', deleted_at = $1 WHERE id = $2 AND state = 'deleting'",
          [now(), tenantId],
        ),
      );
    },

    async setQuotas(tenantId, quotas) {
      const json = quotasJson(quotas);
      const { rowCount } = await pgGuarded('set tenant quotas', () =>
        db.query("UPDATE tenants SET quotas = $1 WHERE id = $2 AND state != 'deleted'", [json, tenantId]),
      );
      return rowCount > 0 ? getTenant(tenantId) : undefined;
    },

    listDeleting: () => deletingTenants(db),

    listQuotas: () => tenantQuotas(db),
  };
};
