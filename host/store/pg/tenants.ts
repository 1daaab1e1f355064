// Tenants and their API keys on PostgreSQL: the TenantStore of ../tenants.ts, the same
// invariants, the same rows (pg/baseline.ts). A raw key exists only in the value returned at
// creation; the database holds its SHA-256 and the short non-secret prefix that finds candidate
// rows; verification compares hashes in constant time and ignores revoked keys. A key that is not
// remembered costs one read (the key joined with its tenant); a verified key is remembered by its
// SHA-256 for `keyCacheMs` (2 s). Revocation through this store forgets the key at once, also
// against a check whose read was in flight during it (it is not remembered); a key
// revoked by another replica on the same database stops working here within keyCacheMs. Only
// valid keys are remembered, at most KEY_CACHE_MAX of them. A tenant and its first key are made in
// one transaction.
// The key's shape, prefix length and cache bound are tenants.ts's own constants, so a key made on
// one backend verifies on the other.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { nanoid } from 'nanoid';
import { SandboxError } from '../../errors.ts';
import {
  API_KEY_PREFIX,
  type ApiKeyInfo,
  type CreatedKey,
  KEY_CACHE_MAX,
  KEY_SHAPE,
  PREFIX_LENGTH,
  type Tenant,
  type TenantStore,
  type TenantStoreOptions,
} from '../tenants.ts';
import { type PgDatabase, type PgQueries, pgGuarded } from './db.ts';

const sha256 = (key: string): Buffer => createHash('sha256').update(key, 'utf8').digest();

const TENANT = 'id, name, created_at AS "createdAt"';

interface KeyRow {
  id: string;
  tenant_id: string;
  prefix: string;
  created_at: number;
  revoked_at: number | null;
}

/** A live key that could be the one presented, with its tenant (verifyKey's one read). */
interface CandidateRow {
  id: string;
  hash: Buffer;
  tenant_id: string;
  tenant_name: string;
  tenant_created_at: number;
}

export const createPgTenantStore = (
  db: PgDatabase,
  now: () => number = Date.now,
  options: TenantStoreOptions = {},
): TenantStore => {
  const keyCacheMs = options.keyCacheMs ?? 2000;
  /** sha256 hex → the key's tenant, its id (for revokeKey) and until when it is trusted. */
  const verified = new Map<string, { tenant: Tenant; keyId: string; until: number }>();
  /**
   * Bumped when a revocation ends: a key check whose read was in flight meanwhile may have read the
   * key before it was revoked (its snapshot precedes the UPDATE's commit), so it is not remembered.
   */
  let revocations = 0;

  const getTenant = (id: string): Promise<Tenant | undefined> =>
    pgGuarded('read tenant', () => db.one<Tenant>(`SELECT ${TENANT} FROM tenants WHERE id = $1`, [id]));

  const addKey = async (q: PgQueries, tenantId: string): Promise<CreatedKey> => {
    const apiKey = API_KEY_PREFIX + randomBytes(30).toString('base64url');
    const keyId = `key_${nanoid()}`;
    await q.query(
      'INSERT INTO api_keys (id, tenant_id, hash, prefix, created_at) VALUES ($1, $2, $3, $4, $5)',
      [keyId, tenantId, sha256(apiKey), apiKey.slice(0, PREFIX_LENGTH), now()],
    );
    return { keyId, apiKey };
  };

  return {
    async createTenant(name) {
      if (typeof name !== 'string' || name.trim() === '') {
        throw new SandboxError('BAD_REQUEST', 'a tenant needs a non-empty name');
      }
      return pgGuarded('create tenant', () =>
        db.tx(async (tx) => {
          const tenant: Tenant = { id: `ten_${nanoid()}`, name, createdAt: now() };
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
      if ((await getTenant(tenantId)) === undefined) {
        throw new SandboxError('NOT_FOUND', `no tenant ${tenantId}`, { data: { tenantId } });
      }
      return pgGuarded('create api key', () => addKey(db, tenantId));
    },

    listKeys: (tenantId) =>
      pgGuarded('list api keys', async () =>
        (
          await db.many<KeyRow>(
            'SELECT id, tenant_id, prefix, created_at, revoked_at FROM api_keys WHERE tenant_id = $1 ORDER BY created_at, rowid',
            [tenantId],
          )
        ).map((k) => {
          const info: ApiKeyInfo = {
            id: k.id,
            tenantId: k.tenant_id,
            prefix: k.prefix,
            createdAt: k.created_at,
          };
          if (k.revoked_at !== null) info.revokedAt = k.revoked_at;
          return info;
        }),
      ),

    async verifyKey(apiKey) {
      if (typeof apiKey !== 'string' || !KEY_SHAPE.test(apiKey)) return undefined;
      const hash = sha256(apiKey);
      const hex = hash.toString('hex');
      const known = verified.get(hex);
      if (known !== undefined) {
        if (known.until > now()) return known.tenant;
        verified.delete(hex);
      }
      const revoked = revocations;
      const candidates = await pgGuarded('verify api key', () =>
        db.many<CandidateRow>(
          `SELECT k.id, k.hash, t.id AS tenant_id, t.name AS tenant_name, t.created_at AS tenant_created_at
             FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
            WHERE k.prefix = $1 AND k.revoked_at IS NULL`,
          [apiKey.slice(0, PREFIX_LENGTH)],
        ),
      );
      // Compare against every candidate so timing does not depend on which one matches.
      let match: CandidateRow | undefined;
      for (const row of candidates) {
        if (row.hash.length === hash.length && timingSafeEqual(row.hash, hash)) match = row;
      }
      if (match === undefined) return undefined;
      const tenant: Tenant = {
        id: match.tenant_id,
        name: match.tenant_name,
        createdAt: match.tenant_created_at,
      };
      if (keyCacheMs > 0 && revoked === revocations) {
        if (verified.size >= KEY_CACHE_MAX) verified.delete(verified.keys().next().value as string);
        verified.set(hex, { tenant, keyId: match.id, until: now() + keyCacheMs });
      }
      return tenant;
    },

    async revokeKey(keyId) {
      for (const [hex, entry] of verified) if (entry.keyId === keyId) verified.delete(hex);
      try {
        const { rowCount } = await pgGuarded('revoke api key', () =>
          db.query('UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [
            now(),
            keyId,
          ]),
        );
        return rowCount > 0;
      } finally {
        // Again: a check that read the key while the UPDATE ran may have remembered it since.
        revocations++;
        for (const [hex, entry] of verified) if (entry.keyId === keyId) verified.delete(hex);
      }
    },
  };
};
