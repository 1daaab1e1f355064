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
// database stops working here within keyCacheMs. Only valid keys are remembered, at most
// KEY_CACHE_MAX of them.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { nanoid } from 'nanoid';
import { SandboxError } from '../errors.ts';
import { type Database, guarded, immediate } from './db.ts';

export interface Tenant {
  id: string;
  name: string;
  createdAt: number;
}

export interface CreatedKey {
  keyId: string;
  /** The raw key. Shown once; the store cannot give it back. */
  apiKey: string;
}

export interface ApiKeyInfo {
  id: string;
  tenantId: string;
  prefix: string;
  createdAt: number;
  revokedAt?: number;
}

export interface TenantStore {
  createTenant(name: string): Promise<Tenant & CreatedKey>;
  getTenant(id: string): Promise<Tenant | undefined>;
  listTenants(): Promise<Tenant[]>;
  /** A further key for an existing tenant (rotation). */
  createKey(tenantId: string): Promise<CreatedKey>;
  listKeys(tenantId: string): Promise<ApiKeyInfo[]>;
  /**
   * The key's tenant, or undefined for unknown, malformed or revoked keys. Runs on every HTTP
   * request: a remembered key costs no read, any other one read.
   */
  verifyKey(apiKey: string): Promise<Tenant | undefined>;
  /** False when the key does not exist or was already revoked. */
  revokeKey(keyId: string): Promise<boolean>;
}

export const API_KEY_PREFIX = 'dsk_';
/** Characters of a key kept in clear to find its candidate rows (every backend the same). */
export const PREFIX_LENGTH = API_KEY_PREFIX.length + 8;
/** What a key looks like; anything else is refused without a read. */
export const KEY_SHAPE = /^dsk_[A-Za-z0-9_-]{32,128}$/;

const sha256 = (key: string): Buffer => createHash('sha256').update(key, 'utf8').digest();

interface KeyRow {
  id: string;
  tenant_id: string;
  hash: Uint8Array;
  prefix: string;
  created_at: number;
  revoked_at: number | null;
}

/** A live key that could be the one presented, with its tenant (verifyKey's one read). */
interface CandidateRow {
  id: string;
  hash: Uint8Array;
  tenant_id: string;
  tenant_name: string;
  tenant_created_at: number;
}

/** Verified keys remembered at most (the oldest is forgotten first). */
export const KEY_CACHE_MAX = 4096;

export interface TenantStoreOptions {
  /** How long a verified key is trusted without reading the database again. Default 2000; 0 reads every time. */
  keyCacheMs?: number;
}

export const createTenantStore = (
  db: Database,
  now: () => number = Date.now,
  options: TenantStoreOptions = {},
): TenantStore => {
  const keyCacheMs = options.keyCacheMs ?? 2000;
  /** sha256 hex → the key's tenant, its id (for revokeKey) and until when it is trusted. */
  const verified = new Map<string, { tenant: Tenant; keyId: string; until: number }>();
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
    const apiKey = API_KEY_PREFIX + randomBytes(30).toString('base64url');
    const keyId = `key_${nanoid()}`;
    insertKey.run(keyId, tenantId, sha256(apiKey), apiKey.slice(0, PREFIX_LENGTH), now());
    return { keyId, apiKey };
  };

  return {
    async createTenant(name) {
      if (typeof name !== 'string' || name.trim() === '') {
        throw new SandboxError('BAD_REQUEST', 'a tenant needs a non-empty name');
      }
      return guarded('create tenant', () =>
        immediate(db, () => {
          const tenant: Tenant = { id: `ten_${nanoid()}`, name, createdAt: now() };
          insertTenant.run(tenant.id, tenant.name, tenant.createdAt);
          return { ...tenant, ...addKey(tenant.id) };
        }),
      );
    },

    getTenant: async (id) => getTenant(id),

    listTenants: async () => guarded('list tenants', () => selectTenants.all() as Tenant[]),

    async createKey(tenantId) {
      if (getTenant(tenantId) === undefined) {
        throw new SandboxError('NOT_FOUND', `no tenant ${tenantId}`, { data: { tenantId } });
      }
      return guarded('create api key', () => addKey(tenantId));
    },

    listKeys: async (tenantId) =>
      guarded('list api keys', () =>
        (keysByTenant.all(tenantId) as KeyRow[]).map((k) => {
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
      const candidates = guarded(
        'verify api key',
        () => keysByPrefix.all(apiKey.slice(0, PREFIX_LENGTH)) as CandidateRow[],
      );
      // Compare against every candidate so timing does not depend on which one matches.
      let match: CandidateRow | undefined;
      for (const row of candidates) {
        const stored = Buffer.from(row.hash);
        if (stored.length === hash.length && timingSafeEqual(stored, hash)) match = row;
      }
      if (match === undefined) return undefined;
      const tenant: Tenant = {
        id: match.tenant_id,
        name: match.tenant_name,
        createdAt: match.tenant_created_at,
      };
      if (keyCacheMs > 0) {
        if (verified.size >= KEY_CACHE_MAX) verified.delete(verified.keys().next().value as string);
        verified.set(hex, { tenant, keyId: match.id, until: now() + keyCacheMs });
      }
      return tenant;
    },

    async revokeKey(keyId) {
      for (const [hex, entry] of verified) if (entry.keyId === keyId) verified.delete(hex);
      return guarded('revoke api key', () => revoke.run(now(), keyId).changes > 0);
    },
  };
};
