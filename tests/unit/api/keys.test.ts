// API keys through the public API: a tenant makes, lists and revokes its own keys and never
// another's; the admin does the same for any tenant; a revoked key is refused on the very next
// request, an expired one like an unknown one. Lists are paged (`limit`, `after` = the page's
// `next`) and refuse a hostile page with 400 BAD_REQUEST as the other paged lists do; revoked and
// expired keys past MAX_ENDED_KEYS are deleted when a key is made, and then fail like unknown ones.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KEY_PAGE_MAX, MAX_ENDED_KEYS } from '../../../host/store/tenant-keys.ts';
import { ADMIN_KEY, type Api, type Loose, makeApi } from './harness.ts';

let api: Api;
/** How far the store's clock runs ahead of the wall clock (an expiry reached without waiting). */
let skew = 0;
let tenantA: string;
let tenantB: string;
beforeEach(async () => {
  skew = 0;
  api = await makeApi({}, { store: { now: () => Date.now() + skew } });
  const listed = await api.request(ADMIN_KEY, 'GET', '/v1/tenants');
  [tenantA, tenantB] = listed.json.tenants.map((t: Loose) => t.id);
});
afterEach(async () => {
  await api.close();
});

const keysOf = async (key: string) => (await api.request(key, 'GET', '/v1/keys')).json.keys as Loose[];

describe("a tenant's own keys", () => {
  it('creates a named key shown once, lists it without the secret, and the new key works', async () => {
    const made = await api.request(api.keyA, 'POST', '/v1/keys', { name: 'ci' });
    expect(made.status).toBe(201);
    expect(made.json).toMatchObject({ name: 'ci', apiKey: expect.stringMatching(/^dsk_/) });
    const keys = await keysOf(made.json.apiKey);
    expect(keys.map((k) => k.name)).toEqual([undefined, 'ci']);
    expect(keys.every((k) => k.tenantId === tenantA)).toBe(true);
    expect(JSON.stringify(keys)).not.toContain(made.json.apiKey.slice(12));
    expect(keys[1]).toMatchObject({ id: made.json.id, prefix: made.json.apiKey.slice(0, 12) });
  });

  it("never reaches another tenant's keys: listing shows only its own, revoking another's is 404", async () => {
    const bKeys = await keysOf(api.keyB);
    expect(bKeys).toHaveLength(1);
    await api.request(api.keyB, 'POST', '/v1/keys', { name: 'spare' }); // B has two: not its last
    expect((await keysOf(api.keyA)).map((k) => k.tenantId)).toEqual([tenantA]);
    for (const path of [
      `/v1/keys/${bKeys[0].id}`,
      `/v1/keys/${bKeys[0].id}?lastKey=true`,
      '/v1/keys/key_nope',
    ]) {
      const res = await api.request(api.keyA, 'DELETE', path);
      expect(res.status).toBe(404);
      expect(res.json.error.code).toBe('NOT_FOUND');
    }
    expect((await api.request(api.keyB, 'GET', '/v1/agents')).status).toBe(200);
    // Nor through the admin routes without the admin key.
    for (const [method, path] of [
      ['GET', `/v1/tenants/${tenantB}/keys`],
      ['POST', `/v1/tenants/${tenantB}/keys`],
      ['DELETE', `/v1/tenants/${tenantB}/keys/${bKeys[0].id}`],
    ] as const) {
      expect((await api.request(api.keyA, method, path, method === 'POST' ? {} : undefined)).status).toBe(
        401,
      );
    }
  });

  it('a revoked key is refused on the very next request, the others keep working', async () => {
    const spare = await api.request(api.keyA, 'POST', '/v1/keys', {});
    expect((await api.request(spare.json.apiKey, 'GET', '/v1/agents')).status).toBe(200); // remembered
    expect((await api.request(api.keyA, 'DELETE', `/v1/keys/${spare.json.id}`)).status).toBe(204);
    const refused = await api.request(spare.json.apiKey, 'GET', '/v1/agents');
    expect(refused.status).toBe(401);
    expect(refused.json.error.code).toBe('UNAUTHORIZED');
    expect((await api.request(api.keyA, 'GET', '/v1/agents')).status).toBe(200);
    expect((await keysOf(api.keyA))[1].revokedAt).toBeTypeOf('number');
    expect((await api.request(api.keyA, 'DELETE', `/v1/keys/${spare.json.id}`)).status).toBe(404);
  });

  it('refuses to revoke its last live key unless asked, then locks itself out', async () => {
    const [only] = await keysOf(api.keyA);
    const refused = await api.request(api.keyA, 'DELETE', `/v1/keys/${only.id}`);
    expect(refused.status).toBe(409);
    expect(refused.json.error.code).toBe('CONFLICT');
    expect((await api.request(api.keyA, 'DELETE', `/v1/keys/${only.id}?lastKey=yes`)).status).toBe(400);
    expect((await api.request(api.keyA, 'DELETE', `/v1/keys/${only.id}?lastKey=true`)).status).toBe(204);
    expect((await api.request(api.keyA, 'GET', '/v1/keys')).status).toBe(401);
  });

  it('an expired key is refused with the same answer as an unknown one', async () => {
    const soon = await api.request(api.keyA, 'POST', '/v1/keys', {
      name: 'soon',
      expiresAt: Date.now() + 60_000,
    });
    expect((await api.request(soon.json.apiKey, 'GET', '/v1/agents')).status).toBe(200); // remembered
    skew = 60_000;
    const expired = await api.request(soon.json.apiKey, 'GET', '/v1/agents');
    const unknown = await api.request(`dsk_${'A'.repeat(40)}`, 'GET', '/v1/agents');
    expect(expired.status).toBe(401);
    expect(expired.json).toEqual(unknown.json);
    expect(expired.headers.get('www-authenticate')).toBe(unknown.headers.get('www-authenticate'));
    expect((await keysOf(api.keyA))[1]).toMatchObject({ name: 'soon', expiresAt: expect.any(Number) });
  });

  it('refuses hostile key bodies with 400', async () => {
    for (const body of [
      { expiresAt: Date.now() - 1 },
      { expiresAt: 'tomorrow' },
      { expiresAt: 1.5 },
      { name: '' },
      { name: 'x'.repeat(101) },
      { name: 'ok', tenantId: tenantB },
    ]) {
      const res = await api.request(api.keyA, 'POST', '/v1/keys', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    expect(await keysOf(api.keyA)).toHaveLength(1);
  });
});

describe('the list of keys, paged', () => {
  it('answers the first page without paging as before, and pages that together are the whole list', async () => {
    for (let i = 0; i < 4; i++) await api.request(api.keyA, 'POST', '/v1/keys', { name: `k${i}` });
    const all = await api.request(api.keyA, 'GET', '/v1/keys');
    expect(all.status).toBe(200);
    expect(Object.keys(all.json)).toEqual(['keys']); // no `next`: one page holds them all
    expect(all.json.keys.map((k: Loose) => k.name)).toEqual([undefined, 'k0', 'k1', 'k2', 'k3']);
    const seen: Loose[] = [];
    let path = '/v1/keys?limit=2';
    for (let pages = 1; ; pages++) {
      const page = await api.request(api.keyA, 'GET', path);
      expect(page.status).toBe(200);
      expect(page.json.keys.length).toBeLessThanOrEqual(2);
      seen.push(...page.json.keys);
      if (page.json.next === undefined) {
        expect(pages).toBe(3);
        break;
      }
      expect(page.json.next).toMatch(/^[A-Za-z0-9_-]+$/);
      path = `/v1/keys?limit=2&after=${page.json.next}`;
    }
    expect(seen).toEqual(all.json.keys);
    // The admin's list of the same tenant pages alike.
    const admin = await api.request(ADMIN_KEY, 'GET', `/v1/tenants/${tenantA}/keys?limit=${KEY_PAGE_MAX}`);
    expect(admin.json).toEqual(all.json);
    const first = await api.request(ADMIN_KEY, 'GET', `/v1/tenants/${tenantA}/keys?limit=3`);
    const rest = await api.request(ADMIN_KEY, 'GET', `/v1/tenants/${tenantA}/keys?after=${first.json.next}`);
    expect([...first.json.keys, ...rest.json.keys]).toEqual(all.json.keys);
    // Another tenant's cursor shows it nothing of tenant A.
    const b = await api.request(api.keyB, 'GET', `/v1/keys?after=${first.json.next}`);
    expect(b.status).toBe(200);
    expect(b.json.keys.every((k: Loose) => k.tenantId === tenantB)).toBe(true);
  });

  it('refuses a hostile page with 400 BAD_REQUEST, as the other paged lists do', async () => {
    const other = await api.request(ADMIN_KEY, 'GET', '/v1/admin/workspaces?limit=0');
    expect(other.status).toBe(400);
    const cursorOfNothing = Buffer.from('12.nokey').toString('base64url');
    for (const query of [
      'limit=0',
      'limit=-1',
      `limit=${KEY_PAGE_MAX + 1}`,
      'limit=99999999999999999999',
      'limit=1.5',
      'limit=1e2',
      'limit=',
      'limit=ten',
      'after=',
      'after=garbage!',
      'after=AAAA',
      `after=${cursorOfNothing}`,
      `after=${'A'.repeat(10_000)}`,
      'after=%00',
    ]) {
      for (const key of [api.keyA, ADMIN_KEY]) {
        const path = key === ADMIN_KEY ? `/v1/tenants/${tenantA}/keys?${query}` : `/v1/keys?${query}`;
        const res = await api.request(key, 'GET', path);
        expect(res.status, path).toBe(400);
        expect(res.json.error.code, path).toBe(other.json.error.code);
      }
    }
  });

  it(`keeps the ${MAX_ENDED_KEYS} keys that ended last; an older one is deleted and fails like an unknown key`, async () => {
    const made: Loose[] = [];
    for (let i = 0; i <= MAX_ENDED_KEYS; i++) {
      const key = await api.request(api.keyA, 'POST', '/v1/keys', { name: `churn${i}` });
      expect(key.status).toBe(201);
      expect((await api.request(api.keyA, 'DELETE', `/v1/keys/${key.json.id}`)).status).toBe(204);
      made.push(key.json);
      skew += 1; // each ends a millisecond after the one before
    }
    // The next key made deletes the one that ended first.
    expect((await api.request(api.keyA, 'POST', '/v1/keys', { name: 'new' })).status).toBe(201);
    const listed: Loose[] = [];
    for (let after = ''; ; ) {
      const page = await api.request(api.keyA, 'GET', `/v1/keys?limit=${KEY_PAGE_MAX}${after}`);
      listed.push(...page.json.keys);
      if (page.json.next === undefined) break;
      after = `&after=${page.json.next}`;
    }
    expect(listed).toHaveLength(2 + MAX_ENDED_KEYS);
    expect(listed.map((k) => k.name)).not.toContain('churn0');
    expect(listed.filter((k) => k.revokedAt !== undefined)).toHaveLength(MAX_ENDED_KEYS);
    const pruned = await api.request(made[0].apiKey, 'GET', '/v1/agents');
    const unknown = await api.request(`dsk_${'A'.repeat(40)}`, 'GET', '/v1/agents');
    expect(pruned.status).toBe(401);
    expect(pruned.json).toEqual(unknown.json);
    expect(pruned.headers.get('www-authenticate')).toBe(unknown.headers.get('www-authenticate'));
    expect((await api.request(api.keyA, 'DELETE', `/v1/keys/${made[0].id}`)).status).toBe(404);
  });
});

describe('keys by the admin', () => {
  it("lists, creates and revokes any tenant's keys, the last one too", async () => {
    const made = await api.request(ADMIN_KEY, 'POST', `/v1/tenants/${tenantB}/keys`, { name: 'ops' });
    expect(made.status).toBe(201);
    expect((await api.request(made.json.apiKey, 'GET', '/v1/agents')).status).toBe(200);
    const keys = (await api.request(ADMIN_KEY, 'GET', `/v1/tenants/${tenantB}/keys`)).json.keys as Loose[];
    expect(keys.map((k) => k.name)).toEqual([undefined, 'ops']);
    for (const k of keys)
      expect((await api.request(ADMIN_KEY, 'DELETE', `/v1/tenants/${tenantB}/keys/${k.id}`)).status).toBe(
        204,
      );
    expect((await api.request(api.keyB, 'GET', '/v1/agents')).status).toBe(401);
    expect((await api.request(made.json.apiKey, 'GET', '/v1/agents')).status).toBe(401);
  });

  it("answers 404 for an unknown tenant, and for one tenant's key under another", async () => {
    const [aKey] = (await api.request(ADMIN_KEY, 'GET', `/v1/tenants/${tenantA}/keys`)).json.keys as Loose[];
    expect((await api.request(ADMIN_KEY, 'DELETE', `/v1/tenants/${tenantB}/keys/${aKey.id}`)).status).toBe(
      404,
    );
    expect((await api.request(api.keyA, 'GET', '/v1/agents')).status).toBe(200);
    expect((await api.request(ADMIN_KEY, 'GET', '/v1/tenants/ten_nope/keys')).status).toBe(404);
    expect((await api.request(ADMIN_KEY, 'POST', '/v1/tenants/ten_nope/keys', {})).status).toBe(404);
    expect((await api.request(ADMIN_KEY, 'GET', '/v1/tenants/ten_nope')).status).toBe(404);
    expect((await api.request(ADMIN_KEY, 'GET', `/v1/tenants/${tenantA}`)).json).toMatchObject({
      id: tenantA,
      state: 'active',
    });
  });
});
