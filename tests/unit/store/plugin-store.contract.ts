// The PluginStore contract (cordis_define's packages): every implementation runs this suite through
// a one-line test file. `open` is async so a network database can make its schema first.
import { afterEach, describe, expect, it } from 'vitest';
import type { PluginStore, PluginStoreOptions } from '../../../host/store/plugins-core.ts';
import { packageIdOf } from '../../../host/store/plugins-core.ts';

export interface PluginStoreInstance {
  store: PluginStore;
  /** Another instance over the same storage (a restart / second process). */
  reopen?: () => Promise<PluginStore>;
  close(): Promise<void> | void;
}

export interface PluginStoreHarness {
  name: string;
  open(options?: PluginStoreOptions): Promise<PluginStoreInstance>;
}

const alice = { tenantId: 'ten_a', agentId: 'agt_1' };
const aliceOther = { tenantId: 'ten_a', agentId: 'agt_2' };
const bob = { tenantId: 'ten_b', agentId: 'agt_1' };
const HELLO = "return { name: 'hello', apply(ctx) { ctx.logger.info('hello') } }";
const hello = (host = HELLO) => ({
  plugin: { kind: 'new' as const, idPrefix: 'hello' },
  name: 'Hello package',
  purpose: 'Register a temporary demonstration capability.',
  code: { host },
});

export const runPluginStoreContract = (harness: PluginStoreHarness) => {
  describe(`PluginStore contract (${harness.name})`, () => {
    let instance: PluginStoreInstance | undefined;
    const open = async (options?: PluginStoreOptions) => {
      instance = await harness.open(options);
      return instance.store;
    };
    afterEach(async () => {
      await instance?.close();
      instance = undefined;
    });

    it('defines a new plugin with a content-addressed package, and lists and fetches both', async () => {
      const store = await open();
      const { plugin, package: pkg, created } = await store.define(alice, hello());
      expect(created).toBe(true);
      expect(plugin).toMatchObject({
        tenantId: 'ten_a',
        agentId: 'agt_1',
        idPrefix: 'hello',
        running: false,
      });
      expect(plugin.id).toMatch(/^hello-[0-9a-z]{10}$/);
      expect(pkg.id).toBe(packageIdOf('Hello package', hello().purpose, { host: HELLO }));
      expect(pkg.id).toMatch(/^pkg_[0-9a-f]{24}$/);
      expect(pkg).toMatchObject({ pluginId: plugin.id, code: { host: HELLO }, codeBytes: HELLO.length });
      expect(await store.getPlugin(alice, plugin.id)).toEqual(plugin);
      expect(await store.listPlugins(alice)).toEqual([plugin]);
      expect(await store.getPackage(alice, plugin.id, pkg.id)).toEqual(pkg);
      expect(await store.listPackages(alice, plugin.id)).toEqual([
        {
          id: pkg.id,
          pluginId: plugin.id,
          name: pkg.name,
          purpose: pkg.purpose,
          codeBytes: pkg.codeBytes,
          createdAt: pkg.createdAt,
          hasHost: true,
          hasClient: false,
        },
      ]);
    });

    it('adds packages to an existing plugin; the same content again is the stored package', async () => {
      const store = await open();
      const first = await store.define(alice, hello());
      const existing = { kind: 'existing' as const, pluginId: first.plugin.id };
      const second = await store.define(alice, { ...hello('return () => {}'), plugin: existing });
      expect(second.created).toBe(true);
      expect(second.package.id).not.toBe(first.package.id);
      const again = await store.define(alice, { ...hello(), plugin: existing });
      expect(again).toMatchObject({ created: false, package: first.package });
      expect((await store.listPackages(alice, first.plugin.id)).map((p) => p.id)).toEqual([
        first.package.id,
        second.package.id,
      ]);
      // kind 'new' always makes a new plugin, even for content another plugin holds.
      const copy = await store.define(alice, hello());
      expect(copy.plugin.id).not.toBe(first.plugin.id);
      expect(copy.package.id).toBe(first.package.id);
      expect(await store.listPlugins(alice)).toHaveLength(2);
    });

    it('keeps client code, and a client-only package', async () => {
      const store = await open();
      const { plugin, package: pkg } = await store.define(alice, {
        ...hello(),
        code: { client: 'return { name: "ui" }' },
      });
      expect((await store.getPackage(alice, plugin.id, pkg.id))?.code).toEqual({
        client: 'return { name: "ui" }',
      });
      expect((await store.listPackages(alice, plugin.id))[0]).toMatchObject({
        hasHost: false,
        hasClient: true,
      });
    });

    it("never shows one agent's or tenant's plugins to another", async () => {
      const store = await open();
      const { plugin, package: pkg } = await store.define(alice, hello());
      for (const owner of [aliceOther, bob]) {
        expect(await store.getPlugin(owner, plugin.id)).toBeUndefined();
        expect(await store.listPlugins(owner)).toEqual([]);
        expect(await store.getPackage(owner, plugin.id, pkg.id)).toBeUndefined();
        expect(await store.listPackages(owner, plugin.id)).toEqual([]);
        expect(await store.undefine(owner, plugin.id)).toBe(false);
        await expect(
          store.define(owner, { ...hello(), plugin: { kind: 'existing', pluginId: plugin.id } }),
        ).rejects.toThrow(expect.objectContaining({ code: 'NOT_FOUND' }));
        await expect(store.setRunState(owner, plugin.id, { running: true })).rejects.toThrow(
          expect.objectContaining({ code: 'NOT_FOUND' }),
        );
      }
      expect(await store.getPlugin(alice, plugin.id)).toBeDefined();
    });

    it('refuses definitions it cannot store, with INVALID_ARGUMENTS', async () => {
      const store = await open();
      const bad = [
        { ...hello(), plugin: { kind: 'new' as const, idPrefix: '9lives' } },
        { ...hello(), plugin: { kind: 'new' as const, idPrefix: 'a'.repeat(33) } },
        { ...hello(), plugin: { kind: 'new' as const, idPrefix: 'has space' } },
        { ...hello(), plugin: { kind: 'nope' } as never },
        { ...hello(), code: {} },
        { ...hello(), code: { host: 42 } as never },
        { ...hello(), name: '' },
        { ...hello(), purpose: 'x'.repeat(4001) },
      ];
      for (const input of bad)
        await expect(store.define(alice, input)).rejects.toThrow(
          expect.objectContaining({ code: 'INVALID_ARGUMENTS' }),
        );
      expect(await store.listPlugins(alice)).toEqual([]);
    });

    it('enforces the maxima of the tenant: plugins per agent, packages per plugin, code size', async () => {
      const store = await open({
        limitsOf: (tenantId) =>
          tenantId === 'ten_a' ? { pluginsPerAgent: 2, packagesPerPlugin: 2, codeBytes: 64 } : undefined,
      });
      const a = await store.define(alice, hello('return () => {}'));
      await store.define(alice, hello('return () => 1'));
      await expect(store.define(alice, hello('return () => 2'))).rejects.toThrow(
        expect.objectContaining({ code: 'LIMIT_EXCEEDED', message: expect.stringContaining('2 plugins') }),
      );
      // Another agent of the same tenant has its own count; another tenant has the defaults.
      expect((await store.define(aliceOther, hello('return () => {}'))).created).toBe(true);
      expect((await store.define(bob, hello('x'.repeat(1000)))).created).toBe(true);
      const existing = { kind: 'existing' as const, pluginId: a.plugin.id };
      await store.define(alice, { ...hello('return () => 3'), plugin: existing });
      await expect(store.define(alice, { ...hello('return () => 4'), plugin: existing })).rejects.toThrow(
        expect.objectContaining({ code: 'LIMIT_EXCEEDED', message: expect.stringContaining('2 packages') }),
      );
      // Defining stored content again is no new package, so it passes at the maximum.
      expect((await store.define(alice, { ...hello('return () => 3'), plugin: existing })).created).toBe(
        false,
      );
      await expect(store.define(aliceOther, hello('é'.repeat(33)))).rejects.toThrow(
        expect.objectContaining({ code: 'LIMIT_EXCEEDED', data: { codeBytes: 66, limit: 64 } }),
      );
      // A refused define leaves nothing behind: no plugin without a package.
      expect(await store.listPlugins(aliceOther)).toHaveLength(1);
    });

    it('never lets defines made at once pass a maximum together', async () => {
      const store = await open({ limitsOf: () => ({ pluginsPerAgent: 2 }) });
      const outcomes = await Promise.allSettled(
        [1, 2, 3, 4].map((n) => store.define(alice, hello(`return () => ${n}`))),
      );
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(2);
      for (const o of outcomes.filter((o) => o.status === 'rejected'))
        expect((o as PromiseRejectedResult).reason).toMatchObject({ code: 'LIMIT_EXCEEDED' });
      expect(await store.listPlugins(alice)).toHaveLength(2);
    });

    it('never lets two stores on one storage pass a maximum together (two replicas)', async (context) => {
      const store = await open({ limitsOf: () => ({ pluginsPerAgent: 2, packagesPerPlugin: 3 }) });
      const reopen = instance?.reopen;
      if (reopen === undefined) return context.skip();
      const other = await reopen();
      // Connections open first, so the defines below meet in the database, not in a connect queue.
      await Promise.all([store, store, other, other].map((s) => s.listPlugins(bob)));
      const made = await Promise.allSettled(
        [1, 2, 3, 4].map((n) => (n % 2 === 0 ? store : other).define(alice, hello(`return () => ${n}`))),
      );
      expect(made.filter((o) => o.status === 'fulfilled')).toHaveLength(2);
      for (const o of made.filter((o) => o.status === 'rejected'))
        expect((o as PromiseRejectedResult).reason).toMatchObject({ code: 'LIMIT_EXCEEDED' });
      // Packages of one plugin: it holds one, two more fit.
      const [first] = await store.listPlugins(alice);
      const existing = { kind: 'existing' as const, pluginId: (first as { id: string }).id };
      const added = await Promise.allSettled(
        [5, 6, 7, 8].map((n) =>
          (n % 2 === 0 ? store : other).define(alice, { ...hello(`return () => ${n}`), plugin: existing }),
        ),
      );
      expect(added.filter((o) => o.status === 'fulfilled')).toHaveLength(2);
      expect(await other.listPackages(alice, existing.pluginId)).toHaveLength(3);
      expect(await other.listPlugins(alice)).toHaveLength(2);
    });

    it('records the run state and lists the running plugins of every tenant', async () => {
      const store = await open();
      const a = await store.define(alice, hello());
      const b = await store.define(bob, hello('return () => {}'));
      expect(await store.listRunning()).toEqual([]);
      const running = await store.setRunState(alice, a.plugin.id, {
        running: true,
        currentPackageId: a.package.id,
      });
      expect(running).toMatchObject({ running: true, currentPackageId: a.package.id });
      await store.setRunState(bob, b.plugin.id, { running: true, currentPackageId: b.package.id });
      expect((await store.listRunning()).map((p) => p.id)).toEqual([a.plugin.id, b.plugin.id]);
      // Stopping keeps the current package (what a later run without a package id would use).
      expect(await store.setRunState(alice, a.plugin.id, { running: false })).toMatchObject({
        running: false,
        currentPackageId: a.package.id,
      });
      expect(await store.getPlugin(alice, a.plugin.id)).toMatchObject({ currentPackageId: a.package.id });
      expect((await store.listRunning()).map((p) => p.id)).toEqual([b.plugin.id]);
      // A package of another plugin is no package of this one.
      await expect(
        store.setRunState(alice, a.plugin.id, { running: true, currentPackageId: b.package.id }),
      ).rejects.toThrow(expect.objectContaining({ code: 'NOT_FOUND' }));
    });

    it('undefines a plugin with its packages', async () => {
      const store = await open();
      const { plugin, package: pkg } = await store.define(alice, hello());
      const kept = await store.define(alice, hello('return () => {}'));
      expect(await store.undefine(alice, plugin.id)).toBe(true);
      expect(await store.undefine(alice, plugin.id)).toBe(false);
      expect(await store.getPlugin(alice, plugin.id)).toBeUndefined();
      expect(await store.getPackage(alice, plugin.id, pkg.id)).toBeUndefined();
      expect((await store.listPlugins(alice)).map((p) => p.id)).toEqual([kept.plugin.id]);
    });

    it('returns copies: changing what it returned changes nothing stored', async () => {
      const store = await open();
      const { plugin, package: pkg } = await store.define(alice, hello());
      pkg.code.host = 'changed';
      plugin.running = true;
      expect((await store.getPackage(alice, plugin.id, pkg.id))?.code.host).toBe(HELLO);
      expect((await store.getPlugin(alice, plugin.id))?.running).toBe(false);
    });

    it('keeps plugins and packages across a reopen (durable stores)', async (context) => {
      const store = await open();
      const reopen = instance?.reopen;
      if (reopen === undefined) return context.skip();
      const { plugin, package: pkg } = await store.define(alice, hello());
      await store.setRunState(alice, plugin.id, { running: true, currentPackageId: pkg.id });
      const again = await reopen();
      expect(await again.getPackage(alice, plugin.id, pkg.id)).toEqual(pkg);
      expect(await again.listRunning()).toEqual([{ ...plugin, running: true, currentPackageId: pkg.id }]);
    });
  });
};
