// Each tenant's settings (migration 20): one JSON document per tenant that the store keeps and
// decides nothing about (host/agents/tenant-settings.ts validates it and owns its meaning). The
// PostgreSQL twin is pg/tenant-settings.ts, over the same rows.
// Invariants: a document changes only whole; a tenant that never set one reads as undefined.
// Every method returns a Promise (the port a network database can implement); this libsql
// implementation runs its one statement synchronously inside it.
import type { JsonValue } from '../json.ts';
import { type Database, guarded } from './db.ts';

export interface TenantSettingsStore {
  /** The tenant's document; undefined when it never set one. */
  get(tenantId: string): Promise<JsonValue | undefined>;
  /** Replaces the tenant's document whole. */
  put(tenantId: string, settings: JsonValue): Promise<void>;
}

export const createTenantSettingsStore = (
  db: Database,
  now: () => number = Date.now,
): TenantSettingsStore => {
  const select = db.prepare('SELECT settings FROM tenant_settings WHERE tenant_id = ?');
  const upsert = db.prepare(
    `INSERT INTO tenant_settings (tenant_id, settings, updated_at) VALUES (?, ?, ?)
     ON CONFLICT(tenant_id) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at`,
  );
  return {
    get: async (tenantId) =>
      guarded('read tenant settings', () => {
        const row = select.all(tenantId)[0] as { settings: string } | undefined;
        return row === undefined ? undefined : (JSON.parse(row.settings) as JsonValue);
      }),
    put: async (tenantId, settings) =>
      guarded('write tenant settings', () => {
        upsert.run(tenantId, JSON.stringify(settings), now());
      }),
  };
};
