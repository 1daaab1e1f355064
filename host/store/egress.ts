// Each tenant's egress settings (migration 12): its allowlist, the credentials the gateway adds for
// named hosts, its budgets and its search provider, kept as one JSON document per tenant. The store
// decides nothing about them (host/egress/settings.ts validates and owns their meaning). The
// document holds credentials' values, so it is stored sealed (sealed.ts), and the API never returns
// it as it is.
import type { JsonValue } from '../json.ts';
import { type Database, guarded } from './db.ts';
import type { Sealer } from './sealed.ts';

export interface EgressSettingsStore {
  /** The tenant's document; undefined when it never set one. */
  get(tenantId: string): JsonValue | undefined;
  /** Replaces the tenant's document whole. */
  put(tenantId: string, settings: JsonValue): void;
}

export const createEgressSettingsStore = (
  db: Database,
  now: () => number = Date.now,
  sealer?: Sealer,
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
        return row === undefined
          ? undefined
          : (JSON.parse(sealer?.open(row.settings) ?? row.settings) as JsonValue);
      }),
    put: (tenantId, settings) =>
      guarded('write egress settings', () => {
        const text = JSON.stringify(settings);
        upsert.run(tenantId, sealer?.seal(text) ?? text, now());
      }),
  };
};
