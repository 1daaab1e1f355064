// The PluginStore contract (cordis_define's packages): every implementation runs this suite through
// a one-line test file.
import { afterEach, describe, expect, it } from 'vitest';
import type { PluginStore, PluginStoreOptions } from '../../../host/store/plugins-core.ts';
import { packageIdOf } from '../../../host/store/plugins-core.ts';

export interface PluginStoreInstance {
  store: PluginStore;
  /** Another instance over the same storage (a restart / second process). */
  reopen?: () => PluginStore;
  cleanup(): void;
}

export interface PluginStoreHarness {
  name: string;
  open(options?: PluginStoreOptions): PluginStoreInstance;
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
    let instance: PluginStoreInstance;
    const open = (options?: PluginStoreOptions) => {
      instance = harness.open(options);
      return instance.store;
    };
    afterEach(() => instance?.cleanup());

    it('defines a new plugin with a content-addressed package, and lists and fetches both', () => {
      const store = open();
      const { plugin, package: pkg, created } = store.define(alice, hello());
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
      expect(store.getPlugin(alice, plugin.id)).toEqual(plugin);
      expect(store.listPlugins(alice)).toEqual([plugin]);
      expect(store.getPackage(alice, plugin.id, pkg.id)).toEqual(pkg);
      expect(store.listPackages(alice, plugin.id)).toEqual([
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

    it('adds packages to an existing plugin; the same content again is the stored package', () => {
      const store = open();
      const first = store.define(alice, hello());
      const existing = { kind: 'existing' as const, pluginId: first.plugin.id };
      const second = store.define(alice, { ...hello('return () => {}'), plugin: existing });
      expect(second.created).toBe(true);
      expect(second.package.id).not.toBe(first.package.id);
      const again = store.define(alice, { ...hello(), plugin: existing });
      expect(again).toMatchObject({ created: false, package: first.package });
      expect(store.listPackages(alice, first.plugin.id).map((p) => p.id)).toEqual([
        first.package.id,
        second.package.id,
      ]);
      // kind 'new' always makes a new plugin, even for content another plugin holds.
      const copy = store.define(alice, hello());
      expect(copy.plugin.id).not.toBe(first.plugin.id);
      expect(copy.package.id).toBe(first.package.id);
      expect(store.listPlugins(alice)).toHaveLength(2);
    });

    it('keeps client code, and a client-only package', () => {
      const store = open();
      const { plugin, package: pkg } = store.define(alice, {
        ...hello(),
        code: { client: 'return { name: "ui" }' },
      });
      expect(store.getPackage(alice, plugin.id, pkg.id)?.code).toEqual({ client: 'return { name: "ui" }' });
      expect(store.listPackages(alice, plugin.id)[0]).toMatchObject({ hasHost: false, hasClient: true });
    });

    it("never shows one agent's or tenant's plugins to another", () => {
      const store = open();
      const { plugin, package: pkg } = store.define(alice, hello());
      for (const owner of [aliceOther, bob]) {
        expect(store.getPlugin(owner, plugin.id)).toBeUndefined();
        expect(store.listPlugins(owner)).toEqual([]);
        expect(store.getPackage(owner, plugin.id, pkg.id)).toBeUndefined();
        expect(store.listPackages(owner, plugin.id)).toEqual([]);
        expect(store.undefine(owner, plugin.id)).toBe(false);
        expect(() =>
          store.define(owner, { ...hello(), plugin: { kind: 'existing', pluginId: plugin.id } }),
        ).toThrow(expect.objectContaining({ code: 'NOT_FOUND' }));
        expect(() => store.setRunState(owner, plugin.id, { running: true })).toThrow(
          expect.objectContaining({ code: 'NOT_FOUND' }),
        );
      }
      expect(store.getPlugin(alice, plugin.id)).toBeDefined();
    });

    it('refuses definitions it cannot store, with INVALID_ARGUMENTS', () => {
      const store = open();
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
        expect(() => store.define(alice, input)).toThrow(
          expect.objectContaining({ code: 'INVALID_ARGUMENTS' }),
        );
      expect(store.listPlugins(alice)).toEqual([]);
    });

    it('enforces the maxima of the tenant: plugins per agent, packages per plugin, code size', () => {
      const store = open({
        limitsOf: (tenantId) =>
          tenantId === 'ten_a' ? { pluginsPerAgent: 2, packagesPerPlugin: 2, codeBytes: 64 } : undefined,
      });
      const a = store.define(alice, hello('return () => {}'));
      store.define(alice, hello('return () => 1'));
      expect(() => store.define(alice, hello('return () => 2'))).toThrow(
        expect.objectContaining({ code: 'LIMIT_EXCEEDED', message: expect.stringContaining('2 plugins') }),
      );
      // Another agent of the same tenant has its own count; another tenant has the defaults.
      expect(store.define(aliceOther, hello('return () => {}')).created).toBe(true);
      expect(store.define(bob, hello('x'.repeat(1000))).created).toBe(true);
      const existing = { kind: 'existing' as const, pluginId: a.plugin.id };
      store.define(alice, { ...hello('return () => 3'), plugin: existing });
      expect(() => store.define(alice, { ...hello('return () => 4'), plugin: existing })).toThrow(
        expect.objectContaining({ code: 'LIMIT_EXCEEDED', message: expect.stringContaining('2 packages') }),
      );
      // Defining stored content again is no new package, so it passes at the maximum.
      expect(store.define(alice, { ...hello('return () => 3'), plugin: existing }).created).toBe(false);
      expect(() => store.define(aliceOther, hello('é'.repeat(33)))).toThrow(
        expect.objectContaining({ code: 'LIMIT_EXCEEDED', data: { codeBytes: 66, limit: 64 } }),
      );
      // A refused define leaves nothing behind: no plugin without a package.
      expect(store.listPlugins(aliceOther)).toHaveLength(1);
    });

    it('records the run state and lists the running plugins of every tenant', () => {
      const store = open();
      const a = store.define(alice, hello());
      const b = store.define(bob, hello('return () => {}'));
      expect(store.listRunning()).toEqual([]);
      const running = store.setRunState(alice, a.plugin.id, {
        running: true,
        currentPackageId: a.package.id,
      });
      expect(running).toMatchObject({ running: true, currentPackageId: a.package.id });
      store.setRunState(bob, b.plugin.id, { running: true, currentPackageId: b.package.id });
      expect(store.listRunning().map((p) => p.id)).toEqual([a.plugin.id, b.plugin.id]);
      // Stopping keeps the current package (what a later run without a package id would use).
      expect(store.setRunState(alice, a.plugin.id, { running: false })).toMatchObject({
        running: false,
        currentPackageId: a.package.id,
      });
      expect(store.getPlugin(alice, a.plugin.id)).toMatchObject({ currentPackageId: a.package.id });
      expect(store.listRunning().map((p) => p.id)).toEqual([b.plugin.id]);
      // A package of another plugin is no package of this one.
      expect(() =>
        store.setRunState(alice, a.plugin.id, { running: true, currentPackageId: b.package.id }),
      ).toThrow(expect.objectContaining({ code: 'NOT_FOUND' }));
    });

    it('undefines a plugin with its packages', () => {
      const store = open();
      const { plugin, package: pkg } = store.define(alice, hello());
      const kept = store.define(alice, hello('return () => {}'));
      expect(store.undefine(alice, plugin.id)).toBe(true);
      expect(store.undefine(alice, plugin.id)).toBe(false);
      expect(store.getPlugin(alice, plugin.id)).toBeUndefined();
      expect(store.getPackage(alice, plugin.id, pkg.id)).toBeUndefined();
      expect(store.listPlugins(alice).map((p) => p.id)).toEqual([kept.plugin.id]);
    });

    it('returns copies: changing what it returned changes nothing stored', () => {
      const store = open();
      const { plugin, package: pkg } = store.define(alice, hello());
      pkg.code.host = 'changed';
      plugin.running = true;
      expect(store.getPackage(alice, plugin.id, pkg.id)?.code.host).toBe(HELLO);
      expect(store.getPlugin(alice, plugin.id)?.running).toBe(false);
    });

    it('keeps plugins and packages across a reopen (durable stores)', (context) => {
      const store = open();
      if (instance.reopen === undefined) return context.skip();
      const { plugin, package: pkg } = store.define(alice, hello());
      store.setRunState(alice, plugin.id, { running: true, currentPackageId: pkg.id });
      const again = instance.reopen();
      expect(again.getPackage(alice, plugin.id, pkg.id)).toEqual(pkg);
      expect(again.listRunning()).toEqual([{ ...plugin, running: true, currentPackageId: pkg.id }]);
    });
  });
};
