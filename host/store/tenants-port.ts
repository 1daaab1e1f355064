// The TenantStore port: tenants and their API keys as every backend keeps them (libsql:
// tenants.ts, PostgreSQL: pg/tenants.ts, what they share: tenant-keys.ts). Types only.

export interface Tenant {
  id: string;
  name: string;
  createdAt: number;
}

/** Where a tenant is in its life. */
export type TenantState =
  /** Its live keys work. */
  | 'active'
  /** DELETE /v1/tenants/:id was asked: every key refused, its things being removed in the background. */
  | 'deleting'
  /** Everything of it is gone; the row stays so the operator can read what happened. */
  | 'deleted';

/** What the operator allows one tenant beyond the service's own limits. Absent: no such bound. */
export interface TenantQuotas {
  /** Live top-level agents at once (children are bounded per parent: DSH_CHILDREN_PER_AGENT). */
  agents?: number;
  /**
   * MiB of workspace its live agents may hold at once: the sum of their workspaces' sizes
   * (`sandbox.diskMb`, else the service's default), top-level agents and children with a workspace
   * of their own.
   */
  diskMb?: number;
  /** Host disk the tenant's workspace snapshots may take together, in bytes (host/agents/service/snapshots.ts). */
  snapshotBytes?: number;
  /**
   * Bytes its durable log may hold (events plus payloads): its budget in place of the service's
   * (DSH_TENANT_LOG_BYTES), host/store/event-log-budget.ts.
   */
  logBytes?: number;
  /** Plugins its agents may run at once: its cap in place of the service's (DSH_PLUGINS_PER_TENANT). */
  plugins?: number;
  /**
   * Bytes its agents' checkpoints may keep together on a control plane's disk, its oldest dropped
   * past it (in place of DSH_TENANT_CHECKPOINT_MAX_BYTES), host/agents/checkpoints/tenant-ledger.ts.
   */
  checkpointBytes?: number;
}

/** A tenant as the operator reads it. */
export interface TenantInfo extends Tenant {
  state: TenantState;
  /** When its deletion was asked (state deleting or deleted). */
  deletingSince?: number;
  /** When its deletion finished (state deleted). */
  deletedAt?: number;
  /** The operator's quotas of it (none set: absent). */
  quotas?: TenantQuotas;
}

export interface CreatedKey {
  keyId: string;
  /** The raw key. Shown once; the store cannot give it back. */
  apiKey: string;
}

/** What a new key may carry. */
export interface KeyOptions {
  /** A label for people (1-100 characters), e.g. "ci" or "laptop". Default: none. */
  name?: string;
  /** Epoch ms after which the key is refused like an unknown one. Must be in the future. Default: never. */
  expiresAt?: number;
}

export interface ApiKeyInfo {
  id: string;
  tenantId: string;
  prefix: string;
  createdAt: number;
  name?: string;
  expiresAt?: number;
  revokedAt?: number;
}

/** Where a page of a tenant's keys starts: after this key (its createdAt and id). */
export interface KeyCursor {
  createdAt: number;
  id: string;
}

/** A page of a tenant's keys: at most `limit`, after `after` (absent: from the oldest). */
export interface KeyPage {
  after?: KeyCursor;
  limit: number;
}

export interface KeyPageResult {
  keys: ApiKeyInfo[];
  /** Where the next page starts; absent on the last page. */
  next?: KeyCursor;
}

/** What revoking one of a tenant's keys did. */
export type RevokeOutcome =
  /** The key was live and is refused from now on. */
  | 'revoked'
  /** No such key for this tenant, or it was already revoked (the two are not told apart). */
  | 'unknown'
  /** Refused: it is the tenant's last live key and `allowLast` was not given. */
  | 'last';

export interface TenantStore {
  /** A tenant and its first key (which `key` may name or bound). */
  createTenant(name: string, key?: KeyOptions): Promise<Tenant & CreatedKey>;
  getTenant(id: string): Promise<TenantInfo | undefined>;
  listTenants(): Promise<TenantInfo[]>;
  /** A further key for an active tenant (rotation). NOT_FOUND for a missing or deleted tenant. */
  createKey(tenantId: string, options?: KeyOptions): Promise<CreatedKey>;
  /**
   * Every key of the tenant, oldest first: its live ones and the MAX_ENDED_KEYS revoked or expired
   * ones that ended last (older ended keys are deleted when the tenant makes a key, tenant-keys.ts).
   */
  listKeys(tenantId: string): Promise<ApiKeyInfo[]>;
  /** One page of listKeys() (GET /v1/keys), `page.limit` at most (1..KEY_PAGE_MAX). */
  listKeyPage(tenantId: string, page: KeyPage): Promise<KeyPageResult>;
  /**
   * The key's tenant, or undefined for unknown, malformed, revoked or expired keys and keys of a
   * tenant that is not active. Runs on every HTTP request: a remembered key costs no read, any
   * other one read.
   */
  verifyKey(apiKey: string): Promise<Tenant | undefined>;
  /** False when the key does not exist or was already revoked. */
  revokeKey(keyId: string): Promise<boolean>;
  /**
   * Revokes `keyId` if it is one of `tenantId`'s live keys. Its last live (unrevoked, unexpired)
   * key only with `allowLast` (decided against concurrent revocations in one transaction).
   */
  revokeTenantKey(tenantId: string, keyId: string, options?: { allowLast?: boolean }): Promise<RevokeOutcome>;
  /**
   * Marks the tenant `deleting` and revokes every key of it in the same write, so it is refused
   * from the next request (in every process hearing the wake-up bus). Idempotent: a tenant
   * already deleting or deleted is returned as it is. Undefined for an unknown tenant.
   */
  beginDeletion(tenantId: string): Promise<TenantInfo | undefined>;
  /** Marks a deleting tenant `deleted` (its things are gone). */
  finishDeletion(tenantId: string): Promise<void>;
  /** Replaces the tenant's quotas (an empty object clears them). Undefined for an unknown or deleted tenant. */
  setQuotas(tenantId: string, quotas: TenantQuotas): Promise<TenantInfo | undefined>;
  /** The tenants whose deletion was asked and has not finished (what a starting service resumes). */
  listDeleting(): Promise<string[]>;
  /**
   * The quotas of every active tenant that has some set (by id), and no other tenant: what a
   * process keeping them at hand reads again (host/tenants/quota-cache.ts). Costs the tenants with
   * quotas, not all tenants (an index holds only those rows).
   */
  listQuotas(): Promise<TenantQuotaRow[]>;
  /**
   * Runs `work` (a quota's check and what it admits) in the tenant's turn of `scope` across every
   * process on the database, so replicas cannot pass a quota together. PostgreSQL only
   * (pg/quota-turns.ts): the embedded libsql store serves one process, whose own turns suffice.
   */
  quotaTurn?<T>(scope: QuotaScope, tenantId: string, work: () => Promise<T>): Promise<T>;
}

/** What a quota turn admits: agents and their workspaces (`agents`, `diskMb`), or snapshots. */
export type QuotaScope = 'agents' | 'snapshots';

/** An active tenant's quotas as listQuotas() answers them. */
export interface TenantQuotaRow {
  tenantId: string;
  quotas: TenantQuotas;
}
