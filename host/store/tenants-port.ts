// The TenantStore port: tenants and their API keys as every backend keeps them (libsql:
// tenants.ts, PostgreSQL: pg/tenants.ts, what they share: tenant-keys.ts). Types only.

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
