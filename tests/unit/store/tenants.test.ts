import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../../host/store/index.ts';
import { tempDatabase } from './harness.ts';

describe('tenants and API keys', () => {
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

  it('creates a tenant with a dsk_ key that verifies to that tenant', () => {
    const { tenants } = open();
    const acme = tenants.createTenant('acme');
    expect(acme.apiKey).toMatch(/^dsk_[A-Za-z0-9_-]{32,}$/);
    expect(acme.id).toMatch(/^ten_/);
    expect(tenants.verifyKey(acme.apiKey)).toEqual({ id: acme.id, name: 'acme', createdAt: acme.createdAt });
    expect(tenants.getTenant(acme.id)?.name).toBe('acme');
    expect(tenants.listTenants().map((t) => t.name)).toEqual(['acme']);
  });

  it('never stores the raw key: the database file holds only its hash and a short prefix', () => {
    const { tenants } = open();
    const { apiKey } = tenants.createTenant('acme');
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

  it('rejects unknown, tampered, malformed and revoked keys', () => {
    const { tenants } = open();
    const acme = tenants.createTenant('acme');
    const last = acme.apiKey.at(-1) === 'A' ? 'B' : 'A';
    expect(tenants.verifyKey(acme.apiKey.slice(0, -1) + last)).toBeUndefined();
    expect(tenants.verifyKey(`dsk_${'x'.repeat(40)}`)).toBeUndefined();
    expect(tenants.verifyKey('Bearer nonsense')).toBeUndefined();
    expect(tenants.verifyKey('')).toBeUndefined();
    expect(tenants.revokeKey(acme.keyId)).toBe(true);
    expect(tenants.revokeKey(acme.keyId)).toBe(false);
    expect(tenants.verifyKey(acme.apiKey)).toBeUndefined();
  });

  it('stops a revoked key at once, even one verified a moment before', () => {
    const { tenants } = open();
    const acme = tenants.createTenant('acme');
    expect(tenants.verifyKey(acme.apiKey)?.id).toBe(acme.id);
    expect(tenants.verifyKey(acme.apiKey)?.id).toBe(acme.id); // remembered now
    tenants.revokeKey(acme.keyId);
    expect(tenants.verifyKey(acme.apiKey)).toBeUndefined();
  });

  it('stops a key another process revoked within the 2 s it trusts a verified key', () => {
    temp = tempDatabase();
    let clock = 1_000_000;
    store = openStore({ dataDir: temp.dir, now: () => clock });
    const acme = store.tenants.createTenant('acme');
    expect(store.tenants.verifyKey(acme.apiKey)?.id).toBe(acme.id);
    const other = openStore({ dataDir: temp.dir }); // the CLI or a second process on this database
    try {
      other.tenants.revokeKey(acme.keyId);
    } finally {
      other.close();
    }
    clock += 1_000;
    expect(store.tenants.verifyKey(acme.apiKey)?.id).toBe(acme.id); // still trusted: the bound
    clock += 1_001;
    expect(store.tenants.verifyKey(acme.apiKey)).toBeUndefined();
  });

  it('rotates: a second key works, revoking the first leaves the second working', () => {
    const { tenants } = open();
    const acme = tenants.createTenant('acme');
    const second = tenants.createKey(acme.id);
    expect(tenants.verifyKey(second.apiKey)?.id).toBe(acme.id);
    tenants.revokeKey(acme.keyId);
    expect(tenants.verifyKey(second.apiKey)?.id).toBe(acme.id);
    expect(tenants.listKeys(acme.id).map((k) => [k.id, k.revokedAt !== undefined])).toEqual([
      [acme.keyId, true],
      [second.keyId, false],
    ]);
    expect(() => tenants.createKey('ten_missing')).toThrow(expect.objectContaining({ code: 'NOT_FOUND' }));
  });

  it('keeps tenants and keys across a restart', () => {
    const { tenants } = open();
    const acme = tenants.createTenant('acme');
    store.close();
    store = openStore({ dataDir: temp.dir });
    expect(store.tenants.verifyKey(acme.apiKey)?.id).toBe(acme.id);
  });

  it('maps each key to its own tenant', () => {
    const { tenants } = open();
    const a = tenants.createTenant('a');
    const b = tenants.createTenant('b');
    expect(tenants.verifyKey(a.apiKey)?.id).toBe(a.id);
    expect(tenants.verifyKey(b.apiKey)?.id).toBe(b.id);
    expect(() => tenants.createTenant('  ')).toThrow(expect.objectContaining({ code: 'BAD_REQUEST' }));
  });
});
