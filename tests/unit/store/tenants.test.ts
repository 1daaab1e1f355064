// What only the libsql TenantStore can show: the bytes of its database file. The behaviour every
// backend shares is tenant-store.contract.ts (run by tenant-store.libsql.test.ts).
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../../host/store/index.ts';
import { tempDatabase } from './harness.ts';

describe('tenants and API keys in the libsql file', () => {
  let temp: ReturnType<typeof tempDatabase>;
  let store: Store;
  const open = () => {
    temp = tempDatabase();
    store = openStore({ dataDir: temp.dir });
    return store;
  };
  afterEach(() => {
    store.close();
    temp.cleanup();
  });

  it('never stores the raw key: the database file holds only its hash and a short prefix', async () => {
    const { tenants } = open();
    const { apiKey } = await tenants.createTenant('acme');
    const secretPart = apiKey.slice(12);
    store.close();
    const bytes = Buffer.concat(
      ['store.db', 'store.db-wal'].flatMap((f) => {
        try {
          return [readFileSync(`${temp.dir}/${f}`)];
        } catch {
          return [];
        }
      }),
    );
    expect(bytes.includes(apiKey)).toBe(false);
    expect(bytes.includes(secretPart)).toBe(false);
    expect(bytes.includes(apiKey.slice(0, 12))).toBe(true); // the lookup prefix: proves we read the rows
  });
});
