// The rows of creator plugins (`plugins`, `plugin_packages`) as every PluginBackend with SQL reads
// and writes them: the row types, their column lists, row → record, and the values of an insert
// or a state update in those columns' order. One module, so the libsql (plugins.ts) and PostgreSQL
// (pg/plugins.ts) backends mean the same by every column; each keeps only its SQL and its
// transaction. Imports no backend.
import type { PackageRecord, PluginRecord } from './plugins-core.ts';

/** A `plugins` row as both backends read it. */
export interface PluginRow {
  id: string;
  tenant_id: string;
  agent_id: string;
  id_prefix: string;
  current_package_id: string | null;
  running: number;
  created_at: number;
}

/** A `plugin_packages` row as both backends read it. */
export interface PackageRow {
  plugin_id: string;
  id: string;
  name: string;
  purpose: string;
  host_code: string | null;
  client_code: string | null;
  code_bytes: number;
  created_at: number;
}

export const toPlugin = (r: PluginRow): PluginRecord => {
  const plugin: PluginRecord = {
    id: r.id,
    tenantId: r.tenant_id,
    agentId: r.agent_id,
    idPrefix: r.id_prefix,
    running: r.running === 1,
    createdAt: r.created_at,
  };
  if (r.current_package_id !== null) plugin.currentPackageId = r.current_package_id;
  return plugin;
};

export const toPackage = (r: PackageRow): PackageRecord => {
  const pkg: PackageRecord = {
    id: r.id,
    pluginId: r.plugin_id,
    name: r.name,
    purpose: r.purpose,
    code: {},
    codeBytes: r.code_bytes,
    createdAt: r.created_at,
  };
  if (r.host_code !== null) pkg.code.host = r.host_code;
  if (r.client_code !== null) pkg.code.client = r.client_code;
  return pkg;
};

export const PLUGIN = 'id, tenant_id, agent_id, id_prefix, current_package_id, running, created_at';
export const PACKAGE = 'plugin_id, id, name, purpose, host_code, client_code, code_bytes, created_at';

/** A new plugin's values for `INSERT INTO plugins (PLUGIN) VALUES (?, ?, ?, ?, NULL, 0, ?)`. */
export const pluginInsertParams = (p: PluginRecord): (string | number)[] => [
  p.id,
  p.tenantId,
  p.agentId,
  p.idPrefix,
  p.createdAt,
];

/** A plugin's state for `SET running = ?, current_package_id = ?`. */
export const pluginStateParams = (state: {
  running: boolean;
  currentPackageId?: string;
}): (number | string | null)[] => [state.running ? 1 : 0, state.currentPackageId ?? null];

/** A package's values in PACKAGE's order. */
export const packageInsertParams = (p: PackageRecord): (string | number | null)[] => [
  p.pluginId,
  p.id,
  p.name,
  p.purpose,
  p.code.host ?? null,
  p.code.client ?? null,
  p.codeBytes,
  p.createdAt,
];
