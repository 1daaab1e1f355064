// Revoking an API key takes effect at once in the process that revoked it, also for a check of that
// key that was reading the database while the revocation ran: on PostgreSQL that read answers a
// round trip later, from a snapshot taken before the revocation committed, and must not put the
// key back into the verified-key cache (where it would keep working for keyCacheMs more).
import { afterEach, expect, it } from 'vitest';
import type { PgDatabase } from '../../../host/store/pg/db.ts';
import { createPgTenantStore } from '../../../host/store/pg/tenants.ts';
import { createStoreDatabase, describePostgres, type StoreDatabase } from '../../helpers/postgres.ts';

describePostgres('API key revocation on PostgreSQL', () => {
  let database: StoreDatabase | undefined;
  afterEach(async () => {
    await database?.drop();
    database = undefined;
  });

  it('is not undone by a verification that read the key before the revocation committed', async () => {
    database = await createStoreDatabase();
    const db = database.open();
    // The key check's read is held (its answer in hand) until the revocation has returned.
    let held: (() => void) | undefined;
    let reading: (() => void) | undefined;
    const read = new Promise<void>((resolve) => {
      reading = resolve;
    });
    const slow: PgDatabase = {
      ...db,
      async many(sql, params) {
        const rows = await db.many(sql, params);
        if (held === undefined && sql.includes('FROM api_keys k JOIN tenants')) {
          await new Promise<void>((resolve) => {
            held = resolve;
            reading?.();
          });
        }
        return rows as never;
      },
    };
    const tenants = createPgTenantStore(slow, Date.now, { keyCacheMs: 60_000 });
    const tenant = await tenants.createTenant('t');
    const [key] = await tenants.listKeys(tenant.id);
    const checking = tenants.verifyKey(tenant.apiKey);
    await read;
    expect(await tenants.revokeKey(key!.id)).toBe(true);
    held?.();
    await checking; // began before the revocation: it may still pass
    expect(await tenants.verifyKey(tenant.apiKey)).toBeUndefined();
  });
});
