// The store on PostgreSQL (DSH_DB=postgres://…): openPgStore() opens a pool, brings the schema up
// to date (pg/migrate.ts, under an advisory lock, so replicas starting together migrate once),
// and wires every port's Postgres backend into the same Store the libsql backend makes, with the
// wake-up bus between replicas (pg/notify.ts: one LISTEN connection of its own, outside the pool).
// Invariants: the same ports, rows, error codes and limits as libsql (each port's contract suite
// runs on both); the event log keeps its shared core (seqs assigned in the process that owns the
// session's family, group commit, byte budgets) over a backend that writes one batch per
// transaction, fenced by the family's lease when replicas share the database (`fence`,
// host/replicas); the replicas port (`leases`) and the limits' central side (`limits`)
// exist on this backend only; close() stops the request timers, writes every queued event, and
// only then ends the pool's connections.
import { SandboxError } from '../../errors.ts';
import { EVENT_BATCH_INTERVAL_MS, type EventFence, type EventLogOptions } from '../event-log-port.ts';
import type { PluginStoreOptions } from '../plugins-core.ts';
import { createSealer } from '../sealed.ts';
import type { Store } from '../store.ts';
import { watchQuotas } from '../tenant-quota-watch.ts';
import { createPgAgentStore } from './agents.ts';
import { createPgCallBatchStore } from './call-batches.ts';
import { openPgDatabase } from './db.ts';
import { createPgEgressSettingsStore } from './egress.ts';
import { createPgEventLog } from './event-log.ts';
import { createPgEventSearch } from './event-search.ts';
import { pgInstanceIdOf } from './instance.ts';
import { createPgLeaseStore } from './leases.ts';
import { createPgLimitStore } from './limits.ts';
import { createPgLogRetentionStore } from './log-retention.ts';
import { migratePg } from './migrate.ts';
import { createPgNodeStore } from './nodes.ts';
import { type PgWakeBus, startPgWakeBus } from './notify.ts';
import { createPgPluginStore } from './plugins.ts';
import { createPgQuotaTurn } from './quota-turns.ts';
import { createPgRequestStore } from './requests.ts';
import { createPgScheduleStore } from './schedules.ts';
import { createPgSessionStateStore } from './session-state.ts';
import { createPgSkillStore } from './skills.ts';
import { createPgSnapshotStore } from './snapshots.ts';
import { createPgTeamBoardStore } from './team-board.ts';
import { createPgTeamStore } from './teams.ts';
import { createPgTenantPurgeStore } from './tenant-purge.ts';
import { createPgTenantSettingsStore } from './tenant-settings.ts';
import { createPgTenantStore } from './tenants.ts';
import { redactUrl } from './url.ts';

export interface OpenPgStoreOptions {
  /** `postgres://` or `postgresql://` URL (pg/db.ts says what it may carry). */
  url: string;
  /** Connections this process may hold. Default 10. */
  poolSize?: number;
  /** The key secrets are sealed with: every replica on one database must use the same one. */
  secretsKey: Buffer;
  /** Clock for every repository. Default Date.now. */
  now?: () => number;
  /** Told about background failures: event writes (retried), idle connections, request timers. */
  onError?: EventLogOptions['onError'];
  /** How long appended events may wait to share one transaction. Default 2 ms. */
  eventBatchWindowMs?: number;
  /** Group commit under load (EventLogOptions.batchIntervalMs). Default EVENT_BATCH_INTERVAL_MS (10). */
  eventBatchIntervalMs?: number;
  /** Log bytes each tenant may hold. Default 512 MiB. */
  logBudgetBytes?: number;
  /** The creator-plugin maxima of a tenant. */
  pluginLimitsOf?: PluginStoreOptions['limitsOf'];
  /** Replicas: the fence every event is written under (host/replicas). */
  fence?: EventFence;
  /** How long a tenant's quota turn waits for a lock another replica holds before STORE_BUSY (ms). Default 5000. */
  quotaWaitMs?: number;
}

/** Opens the PostgreSQL store. Throws CONFIG_INVALID or STORE_FAILED, naming the URL without its password. */
export const openPgStore = async (options: OpenPgStoreOptions): Promise<Store> => {
  const onError = options.onError;
  const db = openPgDatabase({
    url: options.url,
    ...(options.poolSize === undefined ? {} : { poolSize: options.poolSize }),
    ...(onError === undefined ? {} : { onError }),
  });
  let wake: PgWakeBus | undefined;
  try {
    await migratePg(db);
    wake = await startPgWakeBus(db, { ...(onError === undefined ? {} : { onError }) });
    const instanceId = await pgInstanceIdOf(db);
    const now = options.now ?? Date.now;
    const sealer = createSealer(options.secretsKey);
    const events = createPgEventLog(db, {
      now,
      onError,
      batchWindowMs: options.eventBatchWindowMs ?? 2,
      batchIntervalMs: options.eventBatchIntervalMs ?? EVENT_BATCH_INTERVAL_MS,
      ...(options.logBudgetBytes === undefined ? {} : { budgetBytes: options.logBudgetBytes }),
      ...(options.fence === undefined ? {} : { fence: options.fence }),
    });
    const requests = createPgRequestStore(db, { events, now, onError, wake });
    let closing: Promise<void> | undefined;
    return {
      backend: 'postgres',
      instanceId,
      events,
      requests,
      tenants: watchQuotas(
        {
          ...createPgTenantStore(db, now, { wake }),
          quotaTurn: createPgQuotaTurn(db, { waitMs: options.quotaWaitMs }),
        },
        events,
      ),
      tenantPurge: createPgTenantPurgeStore(db),
      logRetention: createPgLogRetentionStore(db),
      agents: createPgAgentStore(db, now, sealer),
      plugins: createPgPluginStore(db, { now, limitsOf: options.pluginLimitsOf }),
      sessionState: createPgSessionStateStore(db, now),
      search: createPgEventSearch(db),
      schedules: createPgScheduleStore(db, now),
      skills: createPgSkillStore(db, now),
      egress: createPgEgressSettingsStore(db, now, sealer),
      teamBoards: createPgTeamBoardStore(db),
      teams: createPgTeamStore(db, now, wake),
      wake,
      leases: createPgLeaseStore(db),
      limits: createPgLimitStore(db),
      callBatches: createPgCallBatchStore(db, now),
      tenantSettings: createPgTenantSettingsStore(db, now),
      nodes: createPgNodeStore(db, now),
      snapshots: createPgSnapshotStore(db),
      close() {
        closing ??= (async () => {
          try {
            requests.close();
            await events.close();
          } finally {
            await wake?.close();
            await db.close();
          }
        })();
        return closing;
      },
    };
  } catch (error) {
    await wake?.close();
    await db.close();
    if (error instanceof SandboxError && error.code === 'STORE_FAILED')
      error.message = `${error.message} (database ${redactUrl(options.url)})`;
    throw error;
  }
};
