// API keys as both backends of the TenantStore make, list and verify them: the key's shape, its
// prefix and hash, a new key, the `api_keys` row → ApiKeyInfo, the errors, and the verified-key
// cache with its constant-time match. One module, so a key made on one backend verifies on the
// other and both refuse with the same words; the libsql (tenants.ts) and PostgreSQL
// (pg/tenants.ts) backends keep only their SQL and transactions. Imports no backend.
// Invariants (the rows): a tenant holds at most MAX_LIVE_KEYS live keys, and the creating
// transaction deletes its ended (revoked or expired) keys past the MAX_ENDED_KEYS that ended
// last, so its rows stay under MAX_LIVE_KEYS + MAX_ENDED_KEYS plus those ended since it last made one.
// Invariants (the cache): only keys that verified are remembered, by their SHA-256, for
// `keyCacheMs`, at most KEY_CACHE_MAX of them (the oldest is forgotten first), and never past
// their expiry (an expired key is refused like an unknown one, cached or not); forget() drops a
// revoked key at once, and a check whose read overlapped a revocation is not remembered. Every candidate row is compared, so timing does not say which one matched.
// Across processes (the wake-up bus, wake-port.ts): a revocation is published as a `key` wake-up
// and every process's verifier forgets that key when it hears it (at once while the bus listens,
// else within `keyCacheMs`); after the bus lost its connection every remembered key is forgotten.
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { nanoid } from 'nanoid';
import { SandboxError } from '../errors.ts';
import type {
  ApiKeyInfo,
  KeyOptions,
  KeyPage,
  KeyPageResult,
  Tenant,
  TenantInfo,
  TenantQuotaRow,
  TenantQuotas,
  TenantState,
} from './tenants-port.ts';
import type { WakeBus } from './wake-port.ts';

export const API_KEY_PREFIX = 'dsk_';
/** Characters of a key kept in clear to find its candidate rows (every backend the same). */
export const PREFIX_LENGTH = API_KEY_PREFIX.length + 8;
/** What a key looks like; anything else is refused without a read. */
export const KEY_SHAPE = /^dsk_[A-Za-z0-9_-]{32,128}$/;
/** Verified keys remembered at most (the oldest is forgotten first). */
export const KEY_CACHE_MAX = 4096;

/** A key's digest in hex: crypto.hash, one call (1.3-2.7 µs against 7-10 for createHash's three; every request checks a key). */
const sha256Hex = (key: string): string => hash('sha256', key, 'hex');
const sha256 = (key: string): Buffer => Buffer.from(sha256Hex(key), 'hex');

/** BAD_REQUEST unless `name` is a non-empty string. */
export const checkTenantName = (name: unknown): void => {
  if (typeof name !== 'string' || name.trim() === '') {
    throw new SandboxError('BAD_REQUEST', 'a tenant needs a non-empty name');
  }
};

/** The longest key name. */
export const KEY_NAME_MAX = 100;

/** BAD_REQUEST unless the name is 1-KEY_NAME_MAX characters and the expiry an integer in the future. */
export const checkKeyOptions = (options: KeyOptions, now: number): void => {
  const { name, expiresAt } = options;
  if (name !== undefined && (typeof name !== 'string' || name.trim() === '' || name.length > KEY_NAME_MAX)) {
    throw new SandboxError('BAD_REQUEST', `a key's name is 1 to ${KEY_NAME_MAX} characters`);
  }
  if (expiresAt !== undefined && (!Number.isSafeInteger(expiresAt) || expiresAt <= now)) {
    throw new SandboxError(
      'BAD_REQUEST',
      "a key's expiresAt is a time in the future, in epoch milliseconds",
      {
        data: { expiresAt, now },
      },
    );
  }
};

export const noTenant = (tenantId: string): SandboxError =>
  new SandboxError('NOT_FOUND', `no tenant ${tenantId}`, { data: { tenantId } });

/** A new tenant's row: a fresh id. */
export const newTenant = (name: string, createdAt: number): Tenant => ({
  id: `ten_${nanoid()}`,
  name,
  createdAt,
});

/** A fresh key: what the caller is shown once, and what the row keeps (hash and prefix). */
export const newApiKey = (): { keyId: string; apiKey: string; hash: Buffer; prefix: string } => {
  const apiKey = API_KEY_PREFIX + randomBytes(30).toString('base64url');
  return { keyId: `key_${nanoid()}`, apiKey, hash: sha256(apiKey), prefix: apiKey.slice(0, PREFIX_LENGTH) };
};

export interface KeyRow {
  id: string;
  tenant_id: string;
  prefix: string;
  created_at: number;
  name: string | null;
  expires_at: number | null;
  revoked_at: number | null;
}

export const keyInfoOf = (k: KeyRow): ApiKeyInfo => {
  const info: ApiKeyInfo = { id: k.id, tenantId: k.tenant_id, prefix: k.prefix, createdAt: k.created_at };
  if (k.name !== null) info.name = k.name;
  if (k.expires_at !== null) info.expiresAt = Number(k.expires_at);
  if (k.revoked_at !== null) info.revokedAt = k.revoked_at;
  return info;
};

/** The columns every backend selects as a KeyRow. */
export const KEY_COLUMNS = 'id, tenant_id, prefix, created_at, name, expires_at, revoked_at';

/** A `tenants` row as the backends select it (TENANT_COLUMNS). */
export interface TenantRow {
  id: string;
  name: string;
  createdAt: number;
  state: TenantState;
  deletingSince: number | null;
  deletedAt: number | null;
  quotas: string | null;
}

export const TENANT_COLUMNS =
  'id, name, created_at AS "createdAt", state, deleting_since AS "deletingSince", deleted_at AS "deletedAt", quotas';

/**
 * What listQuotas() selects: the active tenants with quotas, by id. The partial index of the
 * tenants with quotas (migration 25, tenants_with_quotas: state, id) answers it in order, so it
 * reads those rows alone (the index of every tenant's state would scan all the active ones).
 */
export const QUOTAS_SQL =
  "SELECT id, quotas FROM tenants WHERE quotas IS NOT NULL AND state = 'active' ORDER BY id";

export const quotaRowOf = (row: { id: string; quotas: string }): TenantQuotaRow => ({
  tenantId: row.id,
  quotas: JSON.parse(row.quotas) as TenantQuotas,
});

export const tenantInfoOf = (row: TenantRow): TenantInfo => {
  const info: TenantInfo = { id: row.id, name: row.name, createdAt: Number(row.createdAt), state: row.state };
  if (row.deletingSince !== null) info.deletingSince = Number(row.deletingSince);
  if (row.deletedAt !== null) info.deletedAt = Number(row.deletedAt);
  if (row.quotas !== null) info.quotas = JSON.parse(row.quotas) as TenantQuotas;
  return info;
};

/** The largest quota a count may have. */
export const QUOTA_MAX = 1_000_000;
/** The largest value of each known quota (agents, plugins: counts; diskMb: MiB, 1 PiB; snapshotBytes, logBytes, checkpointBytes: bytes). */
const QUOTA_MAXIMA: Readonly<Record<string, number>> = {
  agents: QUOTA_MAX,
  diskMb: 1024 * 1024 * 1024,
  snapshotBytes: Number.MAX_SAFE_INTEGER,
  logBytes: Number.MAX_SAFE_INTEGER,
  plugins: QUOTA_MAX,
  checkpointBytes: Number.MAX_SAFE_INTEGER,
};

/** BAD_REQUEST unless every quota is a known one with a whole value in 0..its maximum; the JSON kept (null: none). */
export const quotasJson = (quotas: TenantQuotas): string | null => {
  const entries = Object.entries(quotas as Record<string, unknown>).filter(([, v]) => v !== undefined);
  for (const [name, value] of entries) {
    const max = Object.hasOwn(QUOTA_MAXIMA, name) ? QUOTA_MAXIMA[name] : undefined;
    if (max === undefined || !Number.isSafeInteger(value) || (value as number) < 0 || (value as number) > max)
      throw new SandboxError(
        'BAD_REQUEST',
        `quota ${name}: the known quotas are agents (a whole number 0-${QUOTA_MAX}), diskMb (MiB, 0-${QUOTA_MAXIMA.diskMb}), snapshotBytes, logBytes and checkpointBytes (bytes), plugins (0-${QUOTA_MAX})`,
        {
          data: { quota: name },
        },
      );
  }
  return entries.length === 0 ? null : JSON.stringify(Object.fromEntries(entries));
};

/**
 * Whether `keyId` may be revoked among `keys` (all of one tenant's, read in the revoking
 * transaction): 'unknown' when it is not one of them or not live, 'last' when it is the last live
 * one and `allowLast` is not set.
 */
export const revokeDecision = (
  keys: readonly KeyRow[],
  keyId: string,
  now: number,
  allowLast: boolean,
): 'revoke' | 'unknown' | 'last' => {
  const key = keys.find((k) => k.id === keyId);
  if (key === undefined || key.revoked_at !== null) return 'unknown';
  if (allowLast) return 'revoke';
  return keys.some((k) => k.id !== keyId && isLive(k, now)) ? 'revoke' : 'last';
};

/**
 * The most live keys a tenant holds at once (rotation needs two; a fleet of clients a few dozen).
 * Without it a tenant could make keys without end: rows, and a GET /v1/keys answer, that only grow.
 */
export const MAX_LIVE_KEYS = 100;

/** LIMIT_EXCEEDED when `keys` (all of one tenant's, read in the creating transaction) hold MAX_LIVE_KEYS live ones. */
export const checkKeyRoom = (keys: readonly KeyRow[], now: number): void => {
  const live = keys.filter((k) => isLive(k, now)).length;
  if (live >= MAX_LIVE_KEYS)
    throw new SandboxError(
      'LIMIT_EXCEEDED',
      `This tenant has ${live} live API keys, the most it may hold; revoke one it no longer uses first.`,
      { data: { limit: 'keys', max: MAX_LIVE_KEYS } },
    );
};

/**
 * Revoked and expired keys a tenant keeps, the most recently ended first; older ones are deleted
 * when the tenant makes a key (keysToPrune). A bound on their number, not their age: making a key
 * is the only thing that adds a row, so pruning there bounds a tenant's rows at MAX_LIVE_KEYS +
 * MAX_ENDED_KEYS however fast it makes and revokes keys (an age bound would let a fast loop hold
 * rate × age rows, and would need a timer to delete the keys that aged while none was made).
 * A pruned key is unknown: it fails authentication as any unknown key does.
 */
export const MAX_ENDED_KEYS = 100;

/** When a key stopped being live: its revocation or its expiry, whichever came first. */
const endedAt = (k: KeyRow): number =>
  Math.min(
    Number(k.revoked_at ?? Number.POSITIVE_INFINITY),
    Number(k.expires_at ?? Number.POSITIVE_INFINITY),
  );

/**
 * The ids of the ended keys among `keys` (all of one tenant's, read in the creating transaction)
 * past the MAX_ENDED_KEYS that ended last: what the creating transaction deletes.
 */
export const keysToPrune = (keys: readonly KeyRow[], now: number): string[] => {
  const ended = keys.filter((k) => !isLive(k, now));
  if (ended.length <= MAX_ENDED_KEYS) return [];
  // Newest first, then a stable sort: among keys that ended in the same millisecond the older goes first.
  return ended
    .reverse()
    .sort((a, b) => endedAt(b) - endedAt(a))
    .slice(MAX_ENDED_KEYS)
    .map((k) => k.id);
};

/** Most keys one page of GET /v1/keys lists, and how many without `limit`. */
export const KEY_PAGE_MAX = 100;
export const KEY_PAGE_DEFAULT = 100;

/**
 * One page of a tenant's keys, oldest first (created_at, then insertion), after `cursor`'s key:
 * parameters 1 the tenant, 2 the cursor's createdAt (-1: from the start), 3 its key id, 4 the
 * most rows. The cursor carries its createdAt, so a page goes on after a key pruned since (rows
 * of that very millisecond are then listed again, never skipped). `p(n)` spells parameter n.
 */
export const keyPageSql = (p: (n: number) => string): string => `SELECT ${KEY_COLUMNS} FROM api_keys
 WHERE tenant_id = ${p(1)}
   AND (created_at > ${p(2)} OR (created_at = ${p(2)} AND rowid > COALESCE(
        (SELECT rowid FROM api_keys WHERE tenant_id = ${p(1)} AND id = ${p(3)}), -1)))
 ORDER BY created_at, rowid LIMIT ${p(4)}`;

/** A page's size as the store reads it: a whole number in 1..KEY_PAGE_MAX. */
const pageLimit = (page: KeyPage): number =>
  Math.max(1, Math.min(KEY_PAGE_MAX, Math.trunc(page.limit) || KEY_PAGE_DEFAULT));

/** keyPageSql's parameters for `page` (one row more than the page: whether a next one exists). */
export const keyPageParams = (tenantId: string, page: KeyPage): [string, number, string, number] => [
  tenantId,
  page.after?.createdAt ?? -1,
  page.after?.id ?? '',
  pageLimit(page) + 1,
];

/** The page keyPageSql's rows (for `page`, keyPageParams) make. */
export const keyPageOf = (rows: readonly KeyRow[], page: KeyPage): KeyPageResult => {
  const limit = pageLimit(page);
  const shown = rows.slice(0, limit);
  const last = shown.at(-1);
  return {
    keys: shown.map(keyInfoOf),
    ...(rows.length > limit && last !== undefined
      ? { next: { createdAt: Number(last.created_at), id: last.id } }
      : {}),
  };
};

/** Whether a key row counts as live at `now` (not revoked, not expired). */
export const isLive = (k: Pick<KeyRow, 'revoked_at' | 'expires_at'>, now: number): boolean =>
  k.revoked_at === null && (k.expires_at === null || Number(k.expires_at) > now);

/** A live key that could be the one presented, with its tenant (verifyKey's one read). */
export interface CandidateRow {
  id: string;
  hash: Uint8Array;
  tenant_id: string;
  tenant_name: string;
  tenant_created_at: number;
  /** Epoch ms after which the key is refused; null: never. */
  expires_at: number | null;
}

/** verifyKey's one read: the live keys with a prefix, of active tenants, joined with their tenant. */
export const candidatesSql = (
  param: string,
): string => `SELECT k.id, k.hash, k.expires_at, t.id AS tenant_id, t.name AS tenant_name,
       t.created_at AS tenant_created_at
  FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
 WHERE k.prefix = ${param} AND k.revoked_at IS NULL AND t.state = 'active'`;

export interface KeyVerifier {
  /**
   * The key's tenant, or undefined for unknown, malformed or revoked keys. A remembered key costs
   * no read; any other one `read(prefix)` (the live keys with that prefix, joined with their tenant).
   */
  verify(
    apiKey: string,
    read: (prefix: string) => CandidateRow[] | Promise<CandidateRow[]>,
  ): Promise<Tenant | undefined>;
  /** Forgets a key (it is being revoked), so this process refuses it from the next request. */
  forget(keyId: string): void;
  /**
   * A revocation of `keyId` ended (stored or failed): forgets it again, and keeps a check whose
   * read was in flight meanwhile from remembering it (its read may precede the revocation's commit,
   * on a backend whose reads are not synchronous).
   */
  revoked(keyId: string): void;
  /** A revocation was stored: tells the other processes (the bus), so they forget it too. */
  announce(keyId: string): Promise<void>;
}

export const createKeyVerifier = (now: () => number, keyCacheMs: number, wake?: WakeBus): KeyVerifier => {
  /** sha256 hex → the key's tenant, its id (for forget) and until when it is trusted. */
  const verified = new Map<string, { tenant: Tenant; keyId: string; until: number }>();
  /** Bumped when a revocation ends: a check that read before it is not remembered. */
  let revocations = 0;
  const forget = (keyId: string): void => {
    for (const [hex, entry] of verified) if (entry.keyId === keyId) verified.delete(hex);
  };
  const revoked = (keyId: string): void => {
    revocations++;
    forget(keyId);
  };
  // Revoked elsewhere: as a revocation here ended (a check reading meanwhile is not remembered).
  // The subscriptions last as long as the store's bus (they hold no more than this verifier).
  wake?.subscribe('key', revoked);
  wake?.onResync(() => {
    revocations++;
    verified.clear();
  });
  return {
    async verify(apiKey, read) {
      if (typeof apiKey !== 'string' || !KEY_SHAPE.test(apiKey)) return undefined;
      const hex = sha256Hex(apiKey);
      const known = verified.get(hex);
      if (known !== undefined) {
        if (known.until > now()) return known.tenant; // until never passes the key's expiry
        verified.delete(hex);
      }
      const revoked = revocations;
      const candidates = await read(apiKey.slice(0, PREFIX_LENGTH));
      const digest = Buffer.from(hex, 'hex');
      // Compare against every candidate so timing does not depend on which one matches.
      let match: CandidateRow | undefined;
      for (const row of candidates) {
        const stored = Buffer.from(row.hash);
        if (stored.length === digest.length && timingSafeEqual(stored, digest)) match = row;
      }
      if (match === undefined) return undefined;
      const expiresAt = match.expires_at === null ? Number.POSITIVE_INFINITY : Number(match.expires_at);
      const at = now();
      if (expiresAt <= at) return undefined;
      const tenant: Tenant = {
        id: match.tenant_id,
        name: match.tenant_name,
        createdAt: match.tenant_created_at,
      };
      if (keyCacheMs > 0 && revoked === revocations) {
        if (verified.size >= KEY_CACHE_MAX) verified.delete(verified.keys().next().value as string);
        verified.set(hex, { tenant, keyId: match.id, until: Math.min(at + keyCacheMs, expiresAt) });
      }
      return tenant;
    },
    forget,
    revoked,
    announce: (keyId) => wake?.publish('key', keyId) ?? Promise.resolve(),
  };
};
