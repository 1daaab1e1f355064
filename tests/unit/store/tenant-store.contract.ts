// The TenantStore contract (tenants and API keys): every backend runs this suite through a one-line
// test file. `open` is async so a network database can make its schema first; `second` opens
// another store on the same database (the CLI or another replica), `reopen` one after a restart.
import { describe, expect, it } from 'vitest';
import { MAX_ENDED_KEYS, MAX_LIVE_KEYS } from '../../../host/store/tenant-keys.ts';
import type { TenantStore } from '../../../host/store/tenants.ts';
import { closedAfterEach } from '../../helpers/per-test.ts';

export interface TenantStoreInstance {
  store: TenantStore;
  /** Another store on the same database, open beside this one (another process). */
  second(): Promise<TenantStore>;
  /** Closes this store and opens it again on the same database (a restart). */
  reopen(): Promise<TenantStore>;
  close(): Promise<void> | void;
}

export interface TenantStoreHarness {
  name: string;
  open(options?: { now?: () => number }): Promise<TenantStoreInstance>;
}

export const runTenantStoreContract = (harness: TenantStoreHarness) => {
  describe(`TenantStore contract (${harness.name})`, () => {
    const open = closedAfterEach(
      (options?: { now?: () => number }): Promise<TenantStoreInstance> => harness.open(options),
    );

    it('creates a tenant with a dsk_ key that verifies to that tenant', async () => {
      const { store: tenants } = await open();
      const acme = await tenants.createTenant('acme');
      expect(acme.apiKey).toMatch(/^dsk_[A-Za-z0-9_-]{32,}$/);
      expect(acme.id).toMatch(/^ten_/);
      expect(await tenants.verifyKey(acme.apiKey)).toEqual({
        id: acme.id,
        name: 'acme',
        createdAt: acme.createdAt,
      });
      expect((await tenants.getTenant(acme.id))?.name).toBe('acme');
      expect(await tenants.getTenant('ten_missing')).toBeUndefined();
      expect((await tenants.listTenants()).map((t) => t.name)).toEqual(['acme']);
    });

    it('rejects unknown, tampered, malformed and revoked keys', async () => {
      const { store: tenants } = await open();
      const acme = await tenants.createTenant('acme');
      const last = acme.apiKey.at(-1) === 'A' ? 'B' : 'A';
      expect(await tenants.verifyKey(acme.apiKey.slice(0, -1) + last)).toBeUndefined();
      expect(await tenants.verifyKey(`dsk_${'x'.repeat(40)}`)).toBeUndefined();
      expect(await tenants.verifyKey('Bearer nonsense')).toBeUndefined();
      expect(await tenants.verifyKey('')).toBeUndefined();
      expect(await tenants.revokeKey(acme.keyId)).toBe(true);
      expect(await tenants.revokeKey(acme.keyId)).toBe(false);
      expect(await tenants.verifyKey(acme.apiKey)).toBeUndefined();
    });

    it('stops a revoked key at once, even one verified a moment before', async () => {
      const { store: tenants } = await open();
      const acme = await tenants.createTenant('acme');
      expect((await tenants.verifyKey(acme.apiKey))?.id).toBe(acme.id);
      expect((await tenants.verifyKey(acme.apiKey))?.id).toBe(acme.id); // remembered now
      await tenants.revokeKey(acme.keyId);
      expect(await tenants.verifyKey(acme.apiKey)).toBeUndefined();
    });

    it('stops a key another process revoked within the 2 s it trusts a verified key', async () => {
      let clock = 1_000_000;
      const opened = await open({ now: () => clock });
      const acme = await opened.store.createTenant('acme');
      expect((await opened.store.verifyKey(acme.apiKey))?.id).toBe(acme.id);
      const other = await opened.second(); // the CLI or a second process on this database
      expect(await other.revokeKey(acme.keyId)).toBe(true);
      clock += 1_000;
      expect((await opened.store.verifyKey(acme.apiKey))?.id).toBe(acme.id); // still trusted: the bound
      clock += 1_001;
      expect(await opened.store.verifyKey(acme.apiKey)).toBeUndefined();
    });

    it('rotates: a second key works, revoking the first leaves the second working', async () => {
      const { store: tenants } = await open();
      const acme = await tenants.createTenant('acme');
      const second = await tenants.createKey(acme.id);
      expect((await tenants.verifyKey(second.apiKey))?.id).toBe(acme.id);
      await tenants.revokeKey(acme.keyId);
      expect((await tenants.verifyKey(second.apiKey))?.id).toBe(acme.id);
      expect((await tenants.listKeys(acme.id)).map((k) => [k.id, k.revokedAt !== undefined])).toEqual([
        [acme.keyId, true],
        [second.keyId, false],
      ]);
      await expect(tenants.createKey('ten_missing')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });

    it('keeps tenants and keys across a restart', async () => {
      const opened = await open();
      const acme = await opened.store.createTenant('acme');
      const restarted = await opened.reopen();
      expect((await restarted.verifyKey(acme.apiKey))?.id).toBe(acme.id);
      expect((await restarted.listTenants()).map((t) => t.id)).toEqual([acme.id]);
    });

    it('maps each key to its own tenant, and lists tenants oldest first', async () => {
      const { store: tenants } = await open({ now: () => 5 });
      const a = await tenants.createTenant('a');
      const b = await tenants.createTenant('b');
      expect((await tenants.verifyKey(a.apiKey))?.id).toBe(a.id);
      expect((await tenants.verifyKey(b.apiKey))?.id).toBe(b.id);
      expect((await tenants.listTenants()).map((t) => t.name)).toEqual(['a', 'b']);
      await expect(tenants.createTenant('  ')).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    });

    it('names keys, bounds them in time, and refuses an expired key like an unknown one', async () => {
      let clock = 1_000_000;
      const { store: tenants } = await open({ now: () => clock });
      const acme = await tenants.createTenant('acme', { name: 'first' });
      const ci = await tenants.createKey(acme.id, { name: 'ci', expiresAt: clock + 5_000 });
      expect((await tenants.verifyKey(ci.apiKey))?.id).toBe(acme.id); // remembered now
      expect(
        (await tenants.listKeys(acme.id)).map(({ id, name, expiresAt }) => ({ id, name, expiresAt })),
      ).toEqual([
        { id: acme.keyId, name: 'first', expiresAt: undefined },
        { id: ci.keyId, name: 'ci', expiresAt: 1_005_000 },
      ]);
      clock += 5_000; // exactly at expiry: refused, though verified a moment before
      expect(await tenants.verifyKey(ci.apiKey)).toBeUndefined();
      expect((await tenants.verifyKey(acme.apiKey))?.id).toBe(acme.id);
      for (const bad of [
        { expiresAt: clock },
        { expiresAt: clock - 1 },
        { expiresAt: 1.5 },
        { name: '' },
        { name: 'x'.repeat(101) },
      ]) {
        await expect(tenants.createKey(acme.id, bad)).rejects.toMatchObject({ code: 'BAD_REQUEST' });
      }
    });

    it("revokes a tenant's own key only, and its last live key only when asked", async () => {
      let clock = 1_000_000;
      const { store: tenants } = await open({ now: () => clock });
      const acme = await tenants.createTenant('acme');
      const other = await tenants.createTenant('other');
      expect(await tenants.revokeTenantKey(acme.id, other.keyId)).toBe('unknown');
      expect((await tenants.verifyKey(other.apiKey))?.id).toBe(other.id);
      expect(await tenants.revokeTenantKey(acme.id, 'key_missing')).toBe('unknown');
      expect(await tenants.revokeTenantKey(acme.id, acme.keyId)).toBe('last');
      expect((await tenants.verifyKey(acme.apiKey))?.id).toBe(acme.id);
      // An expired key is no live key: the first stays the last one.
      await tenants.createKey(acme.id, { expiresAt: clock + 10 });
      clock += 10;
      expect(await tenants.revokeTenantKey(acme.id, acme.keyId)).toBe('last');
      const second = await tenants.createKey(acme.id);
      expect(await tenants.revokeTenantKey(acme.id, acme.keyId)).toBe('revoked');
      expect(await tenants.verifyKey(acme.apiKey)).toBeUndefined();
      expect(await tenants.revokeTenantKey(acme.id, acme.keyId)).toBe('unknown');
      expect(await tenants.revokeTenantKey(acme.id, second.keyId, { allowLast: true })).toBe('revoked');
      expect(await tenants.verifyKey(second.apiKey)).toBeUndefined();
    });

    it('keeps one live key when two revocations of the last two race', async () => {
      const { store: tenants } = await open();
      const acme = await tenants.createTenant('acme');
      const second = await tenants.createKey(acme.id);
      const outcomes = await Promise.all([
        tenants.revokeTenantKey(acme.id, acme.keyId),
        tenants.revokeTenantKey(acme.id, second.keyId),
      ]);
      expect(outcomes.sort()).toEqual(['last', 'revoked']);
      expect((await tenants.listKeys(acme.id)).filter((k) => k.revokedAt === undefined)).toHaveLength(1);
    });

    it('holds at most MAX_LIVE_KEYS live keys per tenant, even made at once; a revoked one makes room', async () => {
      const { store: tenants } = await open();
      const acme = await tenants.createTenant('acme');
      const made = await Promise.allSettled(
        Array.from({ length: MAX_LIVE_KEYS + 5 }, () => tenants.createKey(acme.id)),
      );
      expect(made.filter((m) => m.status === 'fulfilled')).toHaveLength(MAX_LIVE_KEYS - 1);
      for (const m of made.filter((x) => x.status === 'rejected'))
        expect((m as PromiseRejectedResult).reason).toMatchObject({
          code: 'LIMIT_EXCEEDED',
          data: { limit: 'keys', max: MAX_LIVE_KEYS },
        });
      expect(await tenants.revokeTenantKey(acme.id, acme.keyId)).toBe('revoked');
      await tenants.createKey(acme.id);
      await expect(tenants.createKey(acme.id)).rejects.toMatchObject({ code: 'LIMIT_EXCEEDED' });
    });

    it('pages the keys oldest first, the pages together the whole list, a cursor of another tenant none of its', async () => {
      let clock = 1_000_000;
      const { store: tenants } = await open({ now: () => clock });
      const acme = await tenants.createTenant('acme');
      const other = await tenants.createTenant('other');
      await tenants.createKey(acme.id); // the same millisecond as the first: insertion orders them
      for (let i = 0; i < 4; i++) {
        clock += 1;
        await tenants.createKey(acme.id, { name: `k${i}` });
      }
      const all = (await tenants.listKeys(acme.id)).map((k) => k.id);
      expect(all).toHaveLength(6);
      const seen: string[] = [];
      let page = await tenants.listKeyPage(acme.id, { limit: 4 });
      seen.push(...page.keys.map((k) => k.id));
      expect(page.next).toEqual({ createdAt: 1_000_002, id: all[3] });
      page = await tenants.listKeyPage(acme.id, { limit: 4, ...(page.next && { after: page.next }) });
      seen.push(...page.keys.map((k) => k.id));
      expect(page.next).toBeUndefined();
      expect(seen).toEqual(all);
      // A page exactly full is the last one when nothing follows it.
      expect((await tenants.listKeyPage(acme.id, { limit: 6 })).next).toBeUndefined();
      // After the first key (same millisecond as the second): the second on.
      const [first] = await tenants.listKeys(acme.id);
      const after = { createdAt: first?.createdAt ?? 0, id: first?.id ?? '' };
      expect((await tenants.listKeyPage(acme.id, { after, limit: 10 })).keys.map((k) => k.id)).toEqual(
        all.slice(1),
      );
      // Another tenant's cursor lists only that tenant's own keys.
      expect((await tenants.listKeyPage(other.id, { after, limit: 10 })).keys.map((k) => k.id)).toEqual([
        other.keyId,
      ]);
    });

    it('deletes the ended keys past MAX_ENDED_KEYS when a key is made; a deleted key is unknown', async () => {
      let clock = 1_000_000;
      const { store: tenants } = await open({ now: () => clock });
      const acme = await tenants.createTenant('acme');
      const expiring = await tenants.createKey(acme.id, { expiresAt: clock + 5 }); // ends at +5
      /** Makes a key and revokes it a millisecond later than the last: it ends at `clock`. */
      const churn = async () => {
        clock += 1;
        const made = await tenants.createKey(acme.id);
        expect(await tenants.revokeTenantKey(acme.id, made.keyId)).toBe('revoked');
        return made;
      };
      const revoked = [];
      for (let i = 0; i < MAX_ENDED_KEYS + 2; i++) revoked.push(await churn()); // revoked[i] ends at +1+i
      const idsNow = async () => (await tenants.listKeys(acme.id)).map((k) => k.id);
      // Each key made deleted the ended keys past the bound: the first two revoked (ended at +1,
      // +2) are gone; one revoked since the last key was made is over it until the next.
      let ids = await idsNow();
      expect(ids).toHaveLength(1 + MAX_ENDED_KEYS + 1);
      expect(ids.slice(0, 3)).toEqual([acme.keyId, expiring.keyId, revoked[2]?.keyId]);
      expect(await tenants.verifyKey(revoked[0]?.apiKey ?? '')).toBeUndefined();
      // A page that ends on the key deleted next.
      const first = await tenants.listKeyPage(acme.id, { limit: 3 });
      expect(first.next?.id).toBe(revoked[2]?.keyId);
      const kept = await tenants.createKey(acme.id);
      ids = await idsNow();
      expect(ids).toHaveLength(2 + MAX_ENDED_KEYS);
      expect(ids).not.toContain(revoked[2]?.keyId);
      expect((await tenants.verifyKey(kept.apiKey))?.id).toBe(acme.id);
      // The page after it goes on after it.
      const after = await tenants.listKeyPage(acme.id, {
        limit: 100,
        ...(first.next && { after: first.next }),
      });
      expect(after.keys.map((k) => k.id)).toEqual(ids.slice(2, 102));
      // An expired key ends at its expiry (+5): after revoked[3] (+4), before revoked[4] (+6).
      for (let i = 0; i < 3; i++) await churn();
      ids = await idsNow();
      expect(ids).not.toContain(revoked[3]?.keyId);
      expect(ids).not.toContain(expiring.keyId);
      expect(ids).toContain(revoked[4]?.keyId);
      expect(ids).toHaveLength(2 + MAX_ENDED_KEYS + 1);
    });

    it("keeps the operator's quotas of a tenant, checked, across a restart", async () => {
      const opened = await open();
      const acme = await opened.store.createTenant('acme');
      expect((await opened.store.getTenant(acme.id))?.quotas).toBeUndefined();
      const quotas = { agents: 3, logBytes: 1 << 20, plugins: 4, checkpointBytes: 3 * 2 ** 30 };
      expect((await opened.store.setQuotas(acme.id, quotas))?.quotas).toEqual(quotas);
      for (const bad of [
        { agents: -1 },
        { agents: 1.5 },
        { agents: 2_000_000 },
        { disk: 1 },
        { agents: '3' },
        { logBytes: -1 },
        { logBytes: 2 ** 60 },
        { plugins: 0.5 },
        { plugins: 2_000_000 },
        { checkpointBytes: -1 },
        { checkpointBytes: 0.5 },
        { checkpointBytes: 2 ** 60 },
        { checkpointBytes: '1024' },
      ]) {
        await expect(opened.store.setQuotas(acme.id, bad as never)).rejects.toMatchObject({
          code: 'BAD_REQUEST',
        });
      }
      expect(await opened.store.setQuotas('ten_missing', { agents: 1 })).toBeUndefined();
      const restarted = await opened.reopen();
      expect((await restarted.getTenant(acme.id))?.quotas).toEqual(quotas);
      expect((await restarted.setQuotas(acme.id, {}))?.quotas).toBeUndefined();
    });

    it('lists the quotas of the active tenants that have some, and of no other tenant', async () => {
      const opened = await open();
      const tenants = opened.store;
      const made = [];
      for (let i = 0; i < 30; i++) made.push(await tenants.createTenant(`t${i}`));
      const [a, b, gone, cleared] = made as [
        (typeof made)[0],
        (typeof made)[0],
        (typeof made)[0],
        (typeof made)[0],
      ];
      expect(await tenants.listQuotas()).toEqual([]);
      await tenants.setQuotas(a.id, { plugins: 2 });
      await tenants.setQuotas(b.id, { agents: 1, logBytes: 4096, checkpointBytes: 0 });
      await tenants.setQuotas(gone.id, { agents: 5 });
      await tenants.setQuotas(cleared.id, { agents: 5 });
      await tenants.setQuotas(cleared.id, {});
      await tenants.beginDeletion(gone.id);
      const byId = <T extends { tenantId: string }>(rows: T[]) =>
        [...rows].sort((x, y) => x.tenantId.localeCompare(y.tenantId));
      const expected = byId([
        { tenantId: a.id, quotas: { plugins: 2 } },
        { tenantId: b.id, quotas: { agents: 1, logBytes: 4096, checkpointBytes: 0 } },
      ]);
      expect(byId(await tenants.listQuotas())).toEqual(expected);
      // Another process on the same database reads the same.
      expect(byId(await (await opened.second()).listQuotas())).toEqual(expected);
    });

    it('a tenant being deleted is refused at once on every key, and can be resumed from a list', async () => {
      const opened = await open();
      const tenants = opened.store;
      const acme = await tenants.createTenant('acme');
      const second = await tenants.createKey(acme.id, { name: 'two' });
      const keep = await tenants.createTenant('keep');
      expect((await tenants.verifyKey(acme.apiKey))?.id).toBe(acme.id); // remembered now
      const deleting = await tenants.beginDeletion(acme.id);
      expect(deleting).toMatchObject({ id: acme.id, state: 'deleting' });
      expect(deleting?.deletingSince).toBeTypeOf('number');
      expect(await tenants.verifyKey(acme.apiKey)).toBeUndefined();
      expect(await tenants.verifyKey(second.apiKey)).toBeUndefined();
      expect((await tenants.verifyKey(keep.apiKey))?.id).toBe(keep.id);
      await expect(tenants.createKey(acme.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
      expect((await tenants.beginDeletion(acme.id))?.state).toBe('deleting'); // idempotent
      expect(await tenants.beginDeletion('ten_missing')).toBeUndefined();
      const restarted = await opened.reopen();
      expect(await restarted.listDeleting()).toEqual([acme.id]);
      await restarted.finishDeletion(acme.id);
      expect(await restarted.listDeleting()).toEqual([]);
      const done = await restarted.getTenant(acme.id);
      expect(done?.state).toBe('deleted');
      expect(done?.deletedAt).toBeTypeOf('number');
      expect((await restarted.getTenant(keep.id))?.state).toBe('active');
      expect((await restarted.beginDeletion(acme.id))?.state).toBe('deleted');
    });
  });
};
