// The libsql PluginStore: the shared core (plugins-core.ts) over the `plugins` and
// `plugin_packages` tables (migration 5). Invariants: a define is one BEGIN IMMEDIATE transaction
// (counts and inserts together, so concurrent defines, even from another process, never pass a
// maximum together); packages are only ever inserted or deleted with their plugin, never updated.
// A transaction's view reads lazily with the prepared statements inside that BEGIN IMMEDIATE (the
// scope bounds what it reads) and writes at once; the async methods wrap the same sync calls.
import { type Database, guarded, immediate } from './db.ts';
import {
  createPluginStore,
  lazyPluginReads,
  type PackageRecord,
  type PluginBackend,
  type PluginOwner,
  type PluginRecord,
  type PluginStore,
  type PluginStoreOptions,
  type PluginTx,
  type PluginTxScope,
} from './plugins-core.ts';
import {
  PACKAGE,
  type PackageRow,
  PLUGIN,
  type PluginRow,
  packageInsertParams,
  pluginInsertParams,
  pluginStateParams,
  toPackage,
  toPlugin,
} from './plugins-rows.ts';

export const createLibsqlPluginBackend = (db: Database): PluginBackend => {
  const insertPlugin = db.prepare(`INSERT INTO plugins (${PLUGIN}) VALUES (?, ?, ?, ?, NULL, 0, ?)`);
  const getPlugin = db.prepare(
    `SELECT ${PLUGIN} FROM plugins WHERE id = ? AND tenant_id = ? AND agent_id = ?`,
  );
  const listPlugins = db.prepare(
    `SELECT ${PLUGIN} FROM plugins WHERE tenant_id = ? AND agent_id = ? ORDER BY created_at, rowid`,
  );
  const countPlugins = db.prepare('SELECT count(*) AS n FROM plugins WHERE tenant_id = ? AND agent_id = ?');
  const updatePlugin = db.prepare('UPDATE plugins SET running = ?, current_package_id = ? WHERE id = ?');
  const deletePackages = db.prepare('DELETE FROM plugin_packages WHERE plugin_id = ?');
  const deletePlugin = db.prepare('DELETE FROM plugins WHERE id = ?');
  const listRunning = db.prepare(
    `SELECT ${PLUGIN} FROM plugins WHERE running = 1 ORDER BY created_at, rowid`,
  );
  const insertPackage = db.prepare(
    `INSERT INTO plugin_packages (${PACKAGE}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const getPackage = db.prepare(`SELECT ${PACKAGE} FROM plugin_packages WHERE plugin_id = ? AND id = ?`);
  const listPackages = db.prepare(
    `SELECT ${PACKAGE} FROM plugin_packages WHERE plugin_id = ? ORDER BY created_at, rowid`,
  );
  const countPackages = db.prepare('SELECT count(*) AS n FROM plugin_packages WHERE plugin_id = ?');
  const count = (rows: unknown[]): number => Number((rows[0] as { n: number } | undefined)?.n ?? 0);

  const pluginOf = (owner: PluginOwner, id: string): PluginRecord | undefined => {
    const row = getPlugin.all(id, owner.tenantId, owner.agentId)[0] as PluginRow | undefined;
    return row === undefined ? undefined : toPlugin(row);
  };
  const packageOf = (pluginId: string, id: string): PackageRecord | undefined => {
    const row = getPackage.all(pluginId, id)[0] as PackageRow | undefined;
    return row === undefined ? undefined : toPackage(row);
  };

  /** The view of one transaction: synchronous statements, run inside its BEGIN IMMEDIATE. */
  const txOf = (scope: PluginTxScope): PluginTx => {
    const { owner } = scope;
    return {
      ...lazyPluginReads(scope, {
        countPlugins: () => count(countPlugins.all(owner.tenantId, owner.agentId)),
        plugin: (id) => pluginOf(owner, id),
        package: packageOf,
        countPackages: (pluginId) => count(countPackages.all(pluginId)),
      }),
      insertPlugin: (p) => void insertPlugin.run(...pluginInsertParams(p)),
      updatePlugin: (id, state) => void updatePlugin.run(...pluginStateParams(state), id),
      deletePlugin(id) {
        deletePackages.run(id);
        deletePlugin.run(id);
      },
      insertPackage: (p) => void insertPackage.run(...packageInsertParams(p)),
    };
  };

  return {
    transaction: async (scope, fn) =>
      guarded('plugin store transaction', () => immediate(db, () => fn(txOf(scope)))),
    getPlugin: async (owner, id) => guarded('read plugin', () => pluginOf(owner, id)),
    listPlugins: async (owner) =>
      guarded('list plugins', () =>
        (listPlugins.all(owner.tenantId, owner.agentId) as PluginRow[]).map(toPlugin),
      ),
    listRunning: async () =>
      guarded('list running plugins', () => (listRunning.all() as PluginRow[]).map(toPlugin)),
    getPackage: async (owner, pluginId, id) =>
      guarded('read package', () =>
        pluginOf(owner, pluginId) === undefined ? undefined : packageOf(pluginId, id),
      ),
    listPackages: async (owner, pluginId) =>
      guarded('list packages', () =>
        pluginOf(owner, pluginId) === undefined
          ? []
          : (listPackages.all(pluginId) as PackageRow[]).map(toPackage),
      ),
  };
};

export const createLibsqlPluginStore = (db: Database, options: PluginStoreOptions = {}): PluginStore =>
  createPluginStore(createLibsqlPluginBackend(db), options);
