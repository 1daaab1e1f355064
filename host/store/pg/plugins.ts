// Creator plugins on PostgreSQL: the PluginBackend of the shared core (../plugins-core.ts) over
// the same rows as the libsql backend (../plugins.ts: `plugins`, `plugin_packages`, read and
// written through ../plugins-rows.ts as there), with its invariants: every read takes the owner
// (tenant + agent); a define's counts and inserts commit together, so concurrent defines never
// pass a maximum together, even from two replicas; packages are only ever inserted, or deleted
// with their plugin, never updated.
// Where Postgres differs, and why: libsql's transaction reads lazily inside BEGIN IMMEDIATE (one
// writer for the whole file). Here the decision cannot wait for a query, so transaction(scope, fn):
//   1. takes a transaction-scoped advisory lock on the owner (a hash of 'plugins:', the tenant and
//      the agent). The maxima are per owner (plugins per agent; packages per plugin, and a plugin
//      has one owner), and an owner without plugins has no row to lock: every transaction of one
//      owner queues on it across replicas, other owners' do not (a hash collision only makes two
//      queue);
//   2. loads what the scope names: the owner's plugin count, the scope's plugin (only the owner's)
//      with its package count, and the scope's package of it;
//   3. runs fn over that copy, which records its writes (the core never reads after writing);
//   4. applies the writes in the order fn made them and COMMITs; when fn throws nothing is written.
// Reads outside a transaction order by (created_at, rowid), rowid being baseline.ts's identity
// column standing in for SQLite's implicit one.
import {
  createPluginStore,
  type PackageRecord,
  type PluginBackend,
  type PluginRecord,
  type PluginStore,
  type PluginStoreOptions,
  type PluginTx,
  type PluginTxScope,
} from '../plugins-core.ts';
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
} from '../plugins-rows.ts';
import { type PgDatabase, type PgQueries, pgGuarded } from './db.ts';

/** PACKAGE's columns of `plugin_packages k`, for the reads that join the owner's plugin. */
const PACKAGE_OF_K = PACKAGE.split(', ')
  .map((column) => `k.${column}`)
  .join(', ');

/** A write fn made, applied after it returns. */
type Write = (q: PgQueries) => Promise<unknown>;

/** What a transaction's scope names, as loaded under the owner's lock. */
interface Loaded {
  plugins: number;
  plugin?: PluginRecord;
  packages: number;
  package?: PackageRecord;
}

const lockOwner = async (tx: PgQueries, { owner }: PluginTxScope): Promise<void> => {
  await tx.query("SELECT pg_advisory_xact_lock(hashtextextended('plugins:' || $1 || ':' || $2, 0))", [
    owner.tenantId,
    owner.agentId,
  ]);
};

const load = async (tx: PgQueries, { owner, pluginId, packageId }: PluginTxScope): Promise<Loaded> => {
  const counted = await tx.one<{ n: number }>(
    'SELECT count(*) AS n FROM plugins WHERE tenant_id = $1 AND agent_id = $2',
    [owner.tenantId, owner.agentId],
  );
  const loaded: Loaded = { plugins: counted?.n ?? 0, packages: 0 };
  if (pluginId === undefined) return loaded;
  const row = await tx.one<PluginRow & { packages: number }>(
    `SELECT ${PLUGIN}, (SELECT count(*) FROM plugin_packages k WHERE k.plugin_id = p.id) AS packages
       FROM plugins p WHERE id = $1 AND tenant_id = $2 AND agent_id = $3`,
    [pluginId, owner.tenantId, owner.agentId],
  );
  if (row === undefined) return loaded;
  loaded.plugin = toPlugin(row);
  loaded.packages = row.packages;
  if (packageId === undefined) return loaded;
  const pkg = await tx.one<PackageRow>(
    `SELECT ${PACKAGE} FROM plugin_packages WHERE plugin_id = $1 AND id = $2`,
    [pluginId, packageId],
  );
  if (pkg !== undefined) loaded.package = toPackage(pkg);
  return loaded;
};

/** fn's view: the loaded rows (copies, so fn's changes to them stay its own) and a write log. */
const viewOf = (loaded: Loaded, writes: Write[]): PluginTx => ({
  countPlugins: () => loaded.plugins,
  plugin: () => (loaded.plugin === undefined ? undefined : { ...loaded.plugin }),
  package: () =>
    loaded.package === undefined ? undefined : { ...loaded.package, code: { ...loaded.package.code } },
  countPackages: () => loaded.packages,
  insertPlugin: (p) =>
    void writes.push((q) =>
      q.query(`INSERT INTO plugins (${PLUGIN}) VALUES ($1, $2, $3, $4, NULL, 0, $5)`, pluginInsertParams(p)),
    ),
  insertPackage: (p) =>
    void writes.push((q) =>
      q.query(
        `INSERT INTO plugin_packages (${PACKAGE}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        packageInsertParams(p),
      ),
    ),
  updatePlugin: (id, state) =>
    void writes.push((q) =>
      q.query('UPDATE plugins SET running = $1, current_package_id = $2 WHERE id = $3', [
        ...pluginStateParams(state),
        id,
      ]),
    ),
  deletePlugin: (id) =>
    void writes.push(async (q) => {
      await q.query('DELETE FROM plugin_packages WHERE plugin_id = $1', [id]);
      await q.query('DELETE FROM plugins WHERE id = $1', [id]);
    }),
});

export const createPgPluginBackend = (db: PgDatabase): PluginBackend => {
  const pluginOf = async (q: PgQueries, tenantId: string, agentId: string, id: string) => {
    const row = await q.one<PluginRow>(
      `SELECT ${PLUGIN} FROM plugins WHERE id = $1 AND tenant_id = $2 AND agent_id = $3`,
      [id, tenantId, agentId],
    );
    return row === undefined ? undefined : toPlugin(row);
  };

  return {
    transaction: (scope, fn) =>
      pgGuarded('plugin store transaction', () =>
        db.tx(async (tx) => {
          await lockOwner(tx, scope);
          const writes: Write[] = [];
          const result = fn(viewOf(await load(tx, scope), writes));
          for (const write of writes) await write(tx);
          return result;
        }),
      ),

    getPlugin: (owner, id) => pgGuarded('read plugin', () => pluginOf(db, owner.tenantId, owner.agentId, id)),

    listPlugins: (owner) =>
      pgGuarded('list plugins', async () =>
        (
          await db.many<PluginRow>(
            `SELECT ${PLUGIN} FROM plugins WHERE tenant_id = $1 AND agent_id = $2 ORDER BY created_at, rowid`,
            [owner.tenantId, owner.agentId],
          )
        ).map(toPlugin),
      ),

    listRunning: () =>
      pgGuarded('list running plugins', async () =>
        (
          await db.many<PluginRow>(
            `SELECT ${PLUGIN} FROM plugins WHERE running = 1 ORDER BY created_at, rowid`,
          )
        ).map(toPlugin),
      ),

    // The owner's check and the package in one statement: a package of another owner's plugin
    // reads as absent, like the plugin itself.
    getPackage: (owner, pluginId, id) =>
      pgGuarded('read package', async () => {
        const row = await db.one<PackageRow>(
          `SELECT ${PACKAGE_OF_K} FROM plugin_packages k JOIN plugins p ON p.id = k.plugin_id
            WHERE k.plugin_id = $1 AND k.id = $2 AND p.tenant_id = $3 AND p.agent_id = $4`,
          [pluginId, id, owner.tenantId, owner.agentId],
        );
        return row === undefined ? undefined : toPackage(row);
      }),

    listPackages: (owner, pluginId) =>
      pgGuarded('list packages', async () =>
        (
          await db.many<PackageRow>(
            `SELECT ${PACKAGE_OF_K} FROM plugin_packages k JOIN plugins p ON p.id = k.plugin_id
              WHERE k.plugin_id = $1 AND p.tenant_id = $2 AND p.agent_id = $3
              ORDER BY k.created_at, k.rowid`,
            [pluginId, owner.tenantId, owner.agentId],
          )
        ).map(toPackage),
      ),
  };
};

/** A PluginStore persisted in PostgreSQL: the shared core over this backend. */
export const createPgPluginStore = (db: PgDatabase, options: PluginStoreOptions = {}): PluginStore =>
  createPluginStore(createPgPluginBackend(db), options);
