// In-memory EventLog, RequestStore and PluginStore: the same shared cores as the libsql store over Maps, so
// they behave the same (batched writes, seq rules, first-writer-wins, expiry, waiters). Unit-test
// doubles for other modules; nothing here survives the process. Stored values are kept as JSON
// strings or copies so callers cannot change what was stored.
import type { HostRequest } from '../requests/port.ts';
import { createEventLog } from './event-log-core.ts';
import type { ClosableEventLog, EventLogOptions, EventRow, SyncEventBackend } from './event-log-port.ts';
import { groupBySession, openedBy } from './event-log-rows.ts';
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
  type ClosableRequestStore,
  createRequestStore,
  type RequestBackend,
  type RequestStoreOptions,
} from './request-core.ts';

/** `tenantOf` maps sessions to tenants (default: every session counts against tenant ''). */
export const createMemoryEventBackend = (
  tenantOf: (sessionId: string) => string = () => '',
): SyncEventBackend => {
  const sessions = new Map<string, EventRow[]>();
  const blobs = new Map<string, string>();
  const usage = new Map<string, number>();
  // Calls minus results per session, as sessions.open_calls on the databases.
  const openCalls = new Map<string, number>();
  const key = (tenantId: string, sha256: string) => `${tenantId}\0${sha256}`;
  return {
    lastSeq: (sessionId) => sessions.get(sessionId)?.at(-1)?.seq ?? 0,
    tenantOf,
    usage: (tenantId) => usage.get(tenantId) ?? 0,
    usageAll: () => [...usage].map(([tenantId, bytes]) => ({ tenantId, bytes })),
    readBlob: (tenantId, sha256) => blobs.get(key(tenantId, sha256)),
    hasBlob: (tenantId, sha256) => blobs.has(key(tenantId, sha256)),
    write(rows) {
      for (const [sessionId, group] of groupBySession(rows))
        openCalls.set(sessionId, (openCalls.get(sessionId) ?? 0) + openedBy(group));
      for (const row of rows) {
        const list = sessions.get(row.sessionId) ?? [];
        sessions.set(row.sessionId, list);
        // The queued row itself (the log's own object, never handed out or changed once stored;
        // its payloads are kept once, below, and dropped from it when the write is done).
        list.push(row);
        for (const blob of row.blobs) blobs.set(key(row.tenantId, blob.sha256), blob.json);
        usage.set(row.tenantId, (usage.get(row.tenantId) ?? 0) + row.bytes);
      }
    },
    read(sessionId, afterSeq, limit) {
      const list = sessions.get(sessionId) ?? [];
      // seq starts at 1 and has no gaps, so seq n sits at index n - 1.
      return list.slice(afterSeq, afterSeq + limit);
    },
    callRows(sessionIds) {
      const ids = [...(sessionIds ?? openCalls.keys())].sort();
      return [...new Set(ids)]
        .filter((id) => (openCalls.get(id) ?? 0) > 0)
        .flatMap((id) =>
          (sessions.get(id) ?? []).filter((r) => r.type === 'tool.call' || r.type === 'tool.result'),
        );
    },
  };
};

const copy = (request: HostRequest): HostRequest => structuredClone(request);

export const createMemoryRequestBackend = (): RequestBackend => {
  const requests = new Map<string, HostRequest>();
  return {
    async insert(request) {
      requests.set(request.id, copy(request));
    },
    get: async (id) => {
      const request = requests.get(id);
      return request === undefined ? undefined : copy(request);
    },
    list: async (sessionId, state) =>
      [...requests.values()]
        .filter((r) => r.sessionId === sessionId && (state === undefined || r.state === state))
        .map(copy),
    async settle(id, state, now, answer) {
      const request = requests.get(id);
      if (request === undefined || request.state !== 'pending') return undefined;
      if (state === 'answered' && request.expiresAt <= now) return undefined;
      request.state = state;
      if (state === 'answered') request.answer = structuredClone(answer ?? null);
      return copy(request);
    },
    listPending: async () =>
      [...requests.values()]
        .filter((r) => r.state === 'pending')
        .sort((a, b) => a.expiresAt - b.expiresAt)
        .map(copy),
  };
};

export const createMemoryEventLog = (options: EventLogOptions = {}): ClosableEventLog =>
  createEventLog(createMemoryEventBackend(), options);

export const createMemoryRequestStore = (options: RequestStoreOptions = {}): ClosableRequestStore =>
  createRequestStore(createMemoryRequestBackend(), options);

/**
 * Plugins and packages over Maps. A transaction runs its decision synchronously over the maps; one
 * that throws leaves them as they were (what a database rollback does), so a failed define never
 * leaves a plugin without its package.
 */
export const createMemoryPluginBackend = (): PluginBackend => {
  let plugins = new Map<string, PluginRecord>();
  let packages = new Map<string, PackageRecord[]>();
  const owned = (plugin: PluginRecord | undefined, owner: PluginOwner) =>
    plugin !== undefined && plugin.tenantId === owner.tenantId && plugin.agentId === owner.agentId
      ? structuredClone(plugin)
      : undefined;
  const ofOwner = (owner: PluginOwner) => [...plugins.values()].filter((p) => owned(p, owner) !== undefined);
  const packageOf = (pluginId: string, id: string) => {
    const pkg = packages.get(pluginId)?.find((p) => p.id === id);
    return pkg === undefined ? undefined : structuredClone(pkg);
  };
  const tx = (scope: PluginTxScope): PluginTx => {
    const { owner } = scope;
    return {
      ...lazyPluginReads(scope, {
        countPlugins: () => ofOwner(owner).length,
        plugin: (id) => owned(plugins.get(id), owner),
        package: packageOf,
        countPackages: (pluginId) => packages.get(pluginId)?.length ?? 0,
      }),
      insertPlugin: (p) => void plugins.set(p.id, structuredClone(p)),
      updatePlugin(id, state) {
        const stored = plugins.get(id);
        if (stored === undefined) return;
        const updated: PluginRecord = { ...stored, running: state.running };
        if (state.currentPackageId === undefined) delete updated.currentPackageId;
        else updated.currentPackageId = state.currentPackageId;
        plugins.set(id, updated);
      },
      deletePlugin(id) {
        plugins.delete(id);
        packages.delete(id);
      },
      insertPackage: (pkg) =>
        void packages.set(pkg.pluginId, [...(packages.get(pkg.pluginId) ?? []), structuredClone(pkg)]),
    };
  };
  return {
    async transaction(scope, fn) {
      const saved = { plugins: new Map(plugins), packages: new Map(packages) };
      try {
        return fn(tx(scope));
      } catch (error) {
        plugins = saved.plugins;
        packages = saved.packages;
        throw error;
      }
    },
    getPlugin: async (owner, id) => owned(plugins.get(id), owner),
    listPlugins: async (owner) => ofOwner(owner).map((p) => structuredClone(p)),
    listRunning: async () => [...plugins.values()].filter((p) => p.running).map((p) => structuredClone(p)),
    getPackage: async (owner, pluginId, id) =>
      owned(plugins.get(pluginId), owner) === undefined ? undefined : packageOf(pluginId, id),
    listPackages: async (owner, pluginId) =>
      owned(plugins.get(pluginId), owner) === undefined
        ? []
        : (packages.get(pluginId) ?? []).map((p) => structuredClone(p)),
  };
};

export const createMemoryPluginStore = (options: PluginStoreOptions = {}): PluginStore =>
  createPluginStore(createMemoryPluginBackend(), options);
