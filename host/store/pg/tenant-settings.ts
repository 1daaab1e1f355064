// Each tenant's settings on PostgreSQL: the TenantSettingsStore of ../tenant-settings.ts over the
// same rows (`tenant_settings`: one JSON document per tenant). Invariants, as on libsql: a
// document changes only whole (one upsert, so concurrent writers from several replicas end with
// one of their documents, never a mix).
import type { JsonValue } from '../../json.ts';
import type { TenantSettingsStore } from '../tenant-settings.ts';
import { type PgDatabase, pgGuarded } from './db.ts';

export const createPgTenantSettingsStore = (
  db: PgDatabase,
  now: () => number = Date.now,
): TenantSettingsStore => ({
  get: (tenantId) =>
    pgGuarded('read tenant settings', async () => {
      const row = await db.one<{ settings: string }>(
        'SELECT settings FROM tenant_settings WHERE tenant_id = $1',
        [tenantId],
      );
      return row === undefined ? undefined : (JSON.parse(row.settings) as JsonValue);
    }),
  put: (tenantId, settings) =>
    pgGuarded('write tenant settings', async () => {
      await db.query(
        `INSERT INTO tenant_settings (tenant_id, settings, updated_at) VALUES ($1, $2, $3)
         ON CONFLICT (tenant_id) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at`,
        [tenantId, JSON.stringify(settings), now()],
      );
    }),
});
