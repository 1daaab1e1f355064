// The store's public entry: openStore() opens the database, runs migrations and wires the
// repositories; everything else is named re-exports. Invariant: close() stops the request timers,
// writes every queued event, and only then closes the database.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createAgentStore } from './agents.ts';
import { createCallBatchStore } from './call-batches.ts';
import { type Database, openDatabase, resolveLocation } from './db.ts';
import { createEgressSettingsStore } from './egress.ts';
import { createLibsqlEventLog } from './event-log.ts';
import { EVENT_BATCH_INTERVAL_MS, type EventLogOptions } from './event-log-port.ts';
import { createEventSearch } from './event-search.ts';
import { instanceIdOf } from './instance.ts';
import { createLogRetentionStore } from './log-retention.ts';
import { migrate } from './migrations.ts';
import { createNodeStore } from './nodes.ts';
import { createLibsqlPluginStore } from './plugins.ts';
import type { PluginStoreOptions } from './plugins-core.ts';
import { createLibsqlRequestStore } from './requests.ts';
import { createScheduleStore } from './schedules.ts';
import { createSealer, keyFileSecret } from './sealed.ts';
import { createSessionStateStore } from './session-state.ts';
import { createSkillStore } from './skills.ts';
import { createSnapshotStore } from './snapshots.ts';
import type { Store } from './store.ts';
import { createTeamBoardStore } from './team-board.ts';
import { createTeamStore } from './teams.ts';
import { createTenantPurgeStore } from './tenant-purge.ts';
import { watchQuotas } from './tenant-quota-watch.ts';
import { createTenantSettingsStore } from './tenant-settings.ts';
import { createTenantStore } from './tenants.ts';
import { createLocalWakeBus } from './wake-port.ts';

export interface OpenStoreOptions {
  /** Directory for the database file `store.db` (created with mode 0700). */
  dataDir?: string;
  /** Exact database path, or `:memory:`; wins over dataDir. */
  path?: string;
  /** A `file:` url. Remote libsql urls are refused with CONFIG_INVALID (not supported yet). */
  url?: string;
  /** Busy timeout in ms. Default 5000. */
  busyTimeoutMs?: number;
  /** Clock for every repository. Default Date.now. */
  now?: () => number;
  /** Told about background event-write failures (the events stay queued and are retried). */
  onError?: EventLogOptions['onError'];
  /**
   * How long appended events may wait to share one transaction. Default 2 ms: measured on this
   * machine it cuts durable logging from ~200 to ~40-70 µs per tool call when calls arrive in
   * different ticks (bench/store-log.ts); readers see queued events at once either way.
   */
  eventBatchWindowMs?: number;
  /** Group commit under load (EventLogOptions.batchIntervalMs). Default EVENT_BATCH_INTERVAL_MS (10). */
  eventBatchIntervalMs?: number;
  /** Log bytes each tenant may hold (events plus payloads). Default 512 MiB (event-log-budget.ts says what happens past it). */
  logBudgetBytes?: number;
  /**
   * Where event transactions run: `thread` (the default for a database file) on a writer thread
   * with its own connection, so SQLite's inserts never hold the event loop (bench/store-log.ts);
   * `inline` on the store's connection. An in-memory database is always inline.
   */
  eventWriter?: 'thread' | 'inline';
  /** The creator-plugin maxima of a tenant (plugins per agent, packages per plugin, code size). */
  pluginLimitsOf?: PluginStoreOptions['limitsOf'];
  /**
   * The key secrets are sealed with (sealed.ts). Default: a key file next to the database file
   * (`<path>.key`, made once), a fresh key for an in-memory database.
   */
  secretsKey?: Buffer;
}

/** The libsql store: the ports plus the database they live in (tests and migrations reach it). */
export interface LibsqlStore extends Store {
  backend: 'libsql';
  db: Database;
}

export const STORE_FILE = 'store.db';

export const openStore = (options: OpenStoreOptions): LibsqlStore => {
  const path =
    options.path ??
    (options.dataDir === undefined || options.url !== undefined
      ? undefined
      : join(options.dataDir, STORE_FILE));
  const db = openDatabase({ path, url: options.url, busyTimeoutMs: options.busyTimeoutMs });
  try {
    const sealer = createSealer(
      options.secretsKey ??
        (path === undefined || path === ':memory:' ? randomBytes(32) : keyFileSecret(`${path}.key`)),
    );
    migrate(db);
    const instanceId = instanceIdOf(db);
    const now = options.now ?? Date.now;
    const file = resolveLocation({ path, url: options.url });
    const events = createLibsqlEventLog(db, {
      now,
      ...(file !== ':memory:' && options.eventWriter !== 'inline'
        ? { writerPath: file, busyTimeoutMs: options.busyTimeoutMs }
        : {}),
      onError: options.onError,
      batchWindowMs: options.eventBatchWindowMs ?? 2,
      batchIntervalMs: options.eventBatchIntervalMs ?? EVENT_BATCH_INTERVAL_MS,
      ...(options.logBudgetBytes === undefined ? {} : { budgetBytes: options.logBudgetBytes }),
    });
    const wake = createLocalWakeBus(options.onError);
    const requests = createLibsqlRequestStore(db, { events, now, onError: options.onError, wake });
    let closed = false;
    return {
      backend: 'libsql',
      db,
      instanceId,
      events,
      requests,
      tenants: watchQuotas(createTenantStore(db, now, { wake }), events),
      tenantPurge: createTenantPurgeStore(db),
      logRetention: createLogRetentionStore(db),
      agents: createAgentStore(db, now, sealer),
      plugins: createLibsqlPluginStore(db, { now, limitsOf: options.pluginLimitsOf }),
      sessionState: createSessionStateStore(db, now),
      search: createEventSearch(db),
      schedules: createScheduleStore(db, now),
      skills: createSkillStore(db, now),
      egress: createEgressSettingsStore(db, now, sealer),
      teamBoards: createTeamBoardStore(db),
      teams: createTeamStore(db, now, wake),
      wake,
      callBatches: createCallBatchStore(db, now),
      tenantSettings: createTenantSettingsStore(db, now),
      nodes: createNodeStore(db, now),
      snapshots: createSnapshotStore(db),
      // Synchronous work behind a promise: the database is closed when close() returns.
      async close() {
        if (closed) return;
        closed = true;
        try {
          requests.close();
          void events.close(); // libsql: everything queued is written before it returns
        } finally {
          db.close();
        }
      },
    };
  } catch (error) {
    db.close();
    throw error;
  }
};

export {
  type AgentLinks,
  type AgentPause,
  type AgentRecord,
  type AgentStore,
  type CreateAgentInput,
  createAgentStore,
} from './agents.ts';
export { createCallBatchStore, createMemoryCallBatchStore } from './call-batches.ts';
export {
  CALL_BATCH_TTL_MS,
  type CallBatchClaim,
  type CallBatchKey,
  type CallBatchOutcome,
  type CallBatchRecord,
  type CallBatchStore,
  type ClaimResult,
} from './call-batches-port.ts';
export {
  type Database,
  guarded,
  immediate,
  type OpenDatabaseOptions,
  openDatabase,
  storeError,
  stripMetadata,
} from './db.ts';
export { createEgressSettingsStore, type EgressSettingsStore } from './egress.ts';
export { createLibsqlEventLog, type LibsqlEventBackendOptions } from './event-log.ts';
export { DEFAULT_LOG_BUDGET_BYTES, SETTLING_TYPES } from './event-log-budget.ts';
export { createEventLog } from './event-log-core.ts';
export type {
  ClosableEventLog,
  EventBackend,
  EventLogOptions,
  EventRow,
  QueuedRow,
} from './event-log-port.ts';
export { createEventSearch, MAX_SEARCH_SESSIONS } from './event-search.ts';
export { INSTANCE_ID, instanceIdOf } from './instance.ts';
export { createMemoryEventLog, createMemoryPluginStore, createMemoryRequestStore } from './memory.ts';
export { createMemoryAgentStore, type MemoryAgentStoreOptions } from './memory-agents.ts';
export { latestSchemaVersion, MIGRATIONS, type Migration, migrate, schemaVersion } from './migrations.ts';
export { createLibsqlPluginStore } from './plugins.ts';
export {
  type CordisCode,
  createPluginStore,
  DEFAULT_PLUGIN_STORE_LIMITS,
  type DefineInput,
  type DefineResult,
  type PackageRecord,
  type PackageSummary,
  type PluginBackend,
  type PluginOwner,
  type PluginRecord,
  type PluginSelector,
  type PluginStore,
  type PluginStoreLimits,
  type PluginStoreOptions,
  type PluginTx,
  type PluginTxScope,
  packageIdOf,
} from './plugins-core.ts';
export {
  type ClosableRequestStore,
  createRequestStore,
  type RequestBackend,
  type RequestStoreOptions,
} from './request-core.ts';
export { createLibsqlRequestStore } from './requests.ts';
export {
  createScheduleStore,
  type NewSchedule,
  type ScheduleKind,
  type ScheduleRecord,
  type ScheduleStore,
} from './schedules.ts';
export { ftsExpression, indexText, queryTerms } from './search-text.ts';
export {
  createMemorySessionStateStore,
  createSessionStateStore,
  type SessionStateRecord,
  type SessionStateStore,
} from './session-state.ts';
export {
  createSkillStore,
  type SkillFile,
  type SkillPackage,
  type SkillStore,
  type SkillSummary,
} from './skills.ts';
export type { Store } from './store.ts';
export {
  createTeamBoardStore,
  type TeamBoardStore,
  type TeamBoardTx,
  type TeamTaskRecord,
  type TeamTaskStatus,
} from './team-board.ts';
export {
  type ChildRun,
  type ChildStatus,
  createTeamStore,
  type MailItem,
  type MailKind,
  type NewMailItem,
  type TeamStore,
} from './teams.ts';
export {
  API_KEY_PREFIX,
  type ApiKeyInfo,
  type CreatedKey,
  createTenantStore,
  KEY_PAGE_DEFAULT,
  KEY_PAGE_MAX,
  type KeyCursor,
  type KeyOptions,
  type KeyPage,
  type KeyPageResult,
  MAX_ENDED_KEYS,
  type RevokeOutcome,
  type Tenant,
  type TenantInfo,
  type TenantState,
  type TenantStore,
} from './tenants.ts';
export type * from './types.ts';
export {
  createLocalWakeBus,
  createWakeFanOut,
  WAKE_TOPICS,
  type WakeBus,
  type WakeFanOut,
  type WakeTopic,
} from './wake-port.ts';
