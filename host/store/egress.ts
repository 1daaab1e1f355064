// Each tenant's egress settings (migration 12): its allowlist, the credentials the gateway adds for
// named hosts, its budgets and its search provider, kept as one JSON document per tenant. The store
// decides nothing about them (host/egress/settings.ts validates and owns their meaning). The
// document holds credentials' values, so it is stored sealed (sealed.ts), and the API never returns
// it as it is. Beside it (migration 13), the tenant's interception CA (host/egress/intercept/): its
// certificate and private key, sealed likewise, written once and never replaced.
// Invariants: a document changes only whole; update() reads and writes it in one transaction, so a
// value kept from the stored document (a credential sent without its value) is never one another
// writer replaced meanwhile; the first CA a tenant gets is the one it keeps.
// Every method returns a Promise (the port a network database can implement); this libsql
// implementation runs its statements synchronously inside them (update and putCaOnce inside BEGIN
// IMMEDIATE), a transaction never spans an await.
import type { JsonValue } from '../json.ts';
import { type Database, guarded, immediate } from './db.ts';
import { type Sealer, sealedJson } from './sealed.ts';

/** A tenant's interception CA: its certificate and private key, PEM. */
export interface EgressCa {
  certPem: string;
  keyPem: string;
}

export interface EgressSettingsStore {
  /** The tenant's document; undefined when it never set one. */
  get(tenantId: string): Promise<JsonValue | undefined>;
  /** Replaces the tenant's document whole. */
  put(tenantId: string, settings: JsonValue): Promise<void>;
  /**
   * Replaces the tenant's document with what `fn` makes of the stored one (undefined when it has
   * none), read and written in one transaction: a concurrent put or update of the tenant waits or
   * is waited for, never interleaves. `fn` is synchronous; when it throws nothing is written and
   * the promise rejects with its error. Returns the document written.
   */
  update(tenantId: string, fn: (before: JsonValue | undefined) => JsonValue): Promise<JsonValue>;
  /** The tenant's interception CA (certificate and key, PEM), once made. */
  getCa(tenantId: string): Promise<EgressCa | undefined>;
  /** Keeps `ca` unless the tenant has one already; returns the one kept (the first writer wins). */
  putCaOnce(tenantId: string, ca: EgressCa): Promise<EgressCa>;
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
  const selectCa = db.prepare('SELECT ca FROM tenant_egress_ca WHERE tenant_id = ?');
  const insertCa = db.prepare(
    'INSERT INTO tenant_egress_ca (tenant_id, ca, created_at) VALUES (?, ?, ?) ON CONFLICT(tenant_id) DO NOTHING',
  );
  const json = sealedJson(sealer);
  const read = (tenantId: string): JsonValue | undefined => {
    const row = select.all(tenantId)[0] as { settings: string } | undefined;
    return row === undefined ? undefined : json.open<JsonValue>(row.settings);
  };
  const write = (tenantId: string, settings: JsonValue): void =>
    void upsert.run(tenantId, json.seal(settings), now());
  const getCa = (tenantId: string) =>
    guarded('read the egress CA', () => {
      const row = selectCa.all(tenantId)[0] as { ca: string } | undefined;
      return row === undefined ? undefined : json.open<EgressCa>(row.ca);
    });
  return {
    getCa: async (tenantId) => getCa(tenantId),
    putCaOnce: async (tenantId, ca) =>
      guarded('write the egress CA', () =>
        immediate(db, () => {
          insertCa.run(tenantId, json.seal({ certPem: ca.certPem, keyPem: ca.keyPem }), now());
          return getCa(tenantId) ?? ca;
        }),
      ),
    get: async (tenantId) => guarded('read egress settings', () => read(tenantId)),
    put: async (tenantId, settings) => guarded('write egress settings', () => write(tenantId, settings)),
    update: async (tenantId, fn) =>
      guarded('update egress settings', () =>
        immediate(db, () => {
          const next = fn(read(tenantId));
          write(tenantId, next);
          return next;
        }),
      ),
  };
};
