// Each tenant's egress settings (migration 12): its allowlist, the credentials the gateway adds for
// named hosts, its budgets and its search provider, kept as one JSON document per tenant. The store
// decides nothing about them (host/egress/settings.ts validates and owns their meaning). The
// credentials' values are stored here as given: whoever reads this table reads them, so the API
// never returns the document as it is.
import type { JsonValue } from '../json.ts';
import { type Database, guarded } from './db.ts';

export interface EgressSettingsStore {
  /** The tenant's document; undefined when it never set one. */
  get(tenantId: string): JsonValue | undefined;
  /** Replaces the tenant's document whole. */
  put(tenantId: string, settings: JsonValue): void;
}

export const createEgressSettingsStore = (
  db: Database,
  now: () => number = Date.now,
): EgressSettingsStore => {
  const select = db.prepare('SELECT settings FROM tenant_egress WHERE tenant_id = ?');
  const upsert = db.prepare(
    `INSERT INTO tenant_egress (tenant_id, settings, updated_at) VALUES (?, ?, ?)
     ON CONFLICT(tenant_id) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at`,
  );
  return {
    get: (tenantId) =>
      guarded('read egress settings', () => {
        const row = select.all(tenantId)[0] as { settings: string } | undefined;
        return row === undefined ? undefined : (JSON.parse(row.settings) as JsonValue);
      }),
    put: (tenantId, settings) =>
      guarded('write egress settings', () => {
        upsert.run(tenantId, JSON.stringify(settings), now());
      }),
  };
};
