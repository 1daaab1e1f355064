// The EgressSettingsStore contract (a tenant's egress document and its interception CA, both sealed
// at rest where the backend has a sealer): every backend runs this suite through a one-line test
// file. `open` is async so a network database can make its schema first; `tenant` makes a tenant
// the rows can belong to; `reopen` opens the store again on the same database (a restart or
// another process).
import { describe, expect, it } from 'vitest';
import { SandboxError } from '../../../host/errors.ts';
import type { JsonValue } from '../../../host/json.ts';
import type { EgressSettingsStore } from '../../../host/store/egress.ts';
import { closedAfterEach } from '../../helpers/per-test.ts';

export interface EgressSettingsStoreInstance {
  store: EgressSettingsStore;
  tenant(name: string): Promise<string>;
  /** Another store on the same database (and the same secrets key). */
  reopen(): Promise<EgressSettingsStore>;
  close(): Promise<void> | void;
}

export interface EgressSettingsStoreHarness {
  name: string;
  open(): Promise<EgressSettingsStoreInstance>;
}

const SECRET = 'TOPSECRET-egress-5b1c';
const settings = {
  allow: [{ host: 'example.com' }],
  credentials: [{ name: 'gh', host: 'example.com', header: 'Authorization', value: SECRET }],
  budget: { connections: 4 },
};
const ca = (n: number) => ({ certPem: `CERT ${n}`, keyPem: `KEY ${n}` });

export const runEgressSettingsStoreContract = (harness: EgressSettingsStoreHarness) => {
  describe(`EgressSettingsStore contract (${harness.name})`, () => {
    const open = closedAfterEach((): Promise<EgressSettingsStoreInstance> => harness.open());

    it('has no document for a tenant that never set one, then the one it put, replaced whole', async () => {
      const { store, tenant } = await open();
      const a = await tenant('a');
      expect(await store.get(a)).toBeUndefined();
      await store.put(a, settings);
      expect(await store.get(a)).toEqual(settings);
      await store.put(a, { allow: [] });
      expect(await store.get(a)).toEqual({ allow: [] });
    });

    it("keeps each tenant's document apart", async () => {
      const { store, tenant } = await open();
      const a = await tenant('a');
      const b = await tenant('b');
      await store.put(a, settings);
      expect(await store.get(b)).toBeUndefined();
      await store.put(b, { allow: [{ host: 'b.example' }] });
      expect(await store.get(a)).toEqual(settings);
      expect(await store.get(b)).toEqual({ allow: [{ host: 'b.example' }] });
    });

    it('updates from the stored document in one step; a throwing update writes nothing', async () => {
      const { store, tenant } = await open();
      const a = await tenant('a');
      const seen: unknown[] = [];
      const first = await store.update(a, (before) => {
        seen.push(before);
        return settings;
      });
      expect(first).toEqual(settings);
      expect(
        await store.update(a, (before) => {
          seen.push(before);
          return { allow: [] };
        }),
      ).toEqual({ allow: [] });
      expect(seen).toEqual([undefined, settings]);
      await expect(
        store.update(a, () => {
          throw new SandboxError('BAD_REQUEST', 'refused');
        }),
      ).rejects.toMatchObject({ code: 'BAD_REQUEST', message: 'refused' });
      expect(await store.get(a)).toEqual({ allow: [] });
    });

    it('two stores updating one document at once lose no update', async () => {
      const opened = await open();
      const a = await opened.tenant('a');
      const other = await opened.reopen();
      const bump = (before: JsonValue | undefined) => ({
        n: ((before as { n?: number } | undefined)?.n ?? 0) + 1,
      });
      await Promise.all(
        Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? opened.store : other).update(a, bump)),
      );
      expect(await opened.store.get(a)).toEqual({ n: 8 });
    });

    it('keeps the first CA a tenant gets: a second putCaOnce returns it and changes nothing', async () => {
      const { store, tenant } = await open();
      const a = await tenant('a');
      const b = await tenant('b');
      expect(await store.getCa(a)).toBeUndefined();
      expect(await store.putCaOnce(a, ca(1))).toEqual(ca(1));
      expect(await store.putCaOnce(a, ca(2))).toEqual(ca(1));
      expect(await store.getCa(a)).toEqual(ca(1));
      expect(await store.getCa(b)).toBeUndefined();
      expect(await store.putCaOnce(b, ca(3))).toEqual(ca(3));
    });

    it('reads the document and the CA back from another store on the same database', async () => {
      const opened = await open();
      const a = await opened.tenant('a');
      await opened.store.put(a, settings);
      await opened.store.putCaOnce(a, ca(1));
      const again = await opened.reopen();
      expect(await again.get(a)).toEqual(settings);
      expect(await again.getCa(a)).toEqual(ca(1));
      // A racing second process keeps the first's CA.
      expect(await again.putCaOnce(a, ca(2))).toEqual(ca(1));
      // Two processes making a tenant's first CA at once both keep the same one.
      const b = await opened.tenant('b');
      const kept = await Promise.all([opened.store.putCaOnce(b, ca(3)), again.putCaOnce(b, ca(4))]);
      expect(kept[1]).toEqual(kept[0]);
      expect(await again.getCa(b)).toEqual(kept[0]);
    });
  });
};
