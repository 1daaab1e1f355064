// The store as the rest of the service sees it: every port, whichever backend keeps them
// (libsql: ./index.ts openStore; PostgreSQL: ./pg/index.ts openPgStore; ./connect.ts picks one
// from DSH_DB). Types only.
import type { AgentStore } from './agents-port.ts';
import type { CallBatchStore } from './call-batches-port.ts';
import type { EgressSettingsStore } from './egress.ts';
import type { ClosableEventLog } from './event-log-port.ts';
import type { LeaseStore } from './leases-port.ts';
import type { LimitStore } from './limits-port.ts';
import type { LogRetentionStore } from './log-retention-port.ts';
import type { NodeStore } from './nodes.ts';
import type { PluginStore } from './plugins-core.ts';
import type { ClosableRequestStore } from './request-core.ts';
import type { ScheduleStore } from './schedules.ts';
import type { SessionStateStore } from './session-state.ts';
import type { SkillStore } from './skills.ts';
import type { SnapshotStore } from './snapshots.ts';
import type { TeamBoardStore } from './team-board.ts';
import type { TeamStore } from './teams.ts';
import type { TenantPurgeStore } from './tenant-purge.ts';
import type { TenantSettingsStore } from './tenant-settings.ts';
import type { TenantStore } from './tenants.ts';
import type { EventSearch } from './types.ts';
import type { WakeBus } from './wake-port.ts';

export interface Store {
  /** Which backend keeps the ports. */
  backend: 'libsql' | 'postgres';
  /**
   * This control plane's identity, made once per store (migration 2). The docker provider labels
   * and names everything it creates with it and adopts or removes only what carries it.
   */
  instanceId: string;
  events: ClosableEventLog;
  requests: ClosableRequestStore;
  tenants: TenantStore;
  /** What is left of a deleted tenant, removed in slices (host/tenants/deletion.ts runs it). */
  tenantPurge: TenantPurgeStore;
  /** The durable log's retention, in slices (host/tenants/retention.ts runs it). */
  logRetention: LogRetentionStore;
  agents: AgentStore;
  /** Creator plugins and their immutable packages (cordis_define). */
  plugins: PluginStore;
  /** Each session's todos, plan mode and current goal (host/session/ decides what they mean). */
  sessionState: SessionStateStore;
  /** Full-text search over the session log (the `session_*` tools). */
  search: EventSearch;
  /** Agents' reminders (the `schedule_*` tools). */
  schedules: ScheduleStore;
  /** Each tenant's skill packages (the `skill` tool, /v1/skills). */
  skills: SkillStore;
  /** Each tenant's egress settings (allowlist, credentials, budgets, search provider). */
  egress: EgressSettingsStore;
  /** Each team's task board (the team_task_* tools). */
  teamBoards: TeamBoardStore;
  /** Child agents' runs and every agent's mailbox (the subagent and team tools). */
  teams: TeamStore;
  /**
   * Which replicas run on the database and which owns each agent family (host/replicas). Only
   * PostgreSQL keeps it; the embedded libsql store serves one process, which owns every family.
   */
  leases?: LeaseStore;
  /**
   * The per-tenant limits' central side: egress bytes leased in chunks by each replica, and the
   * live replicas a per-replica limit is shared over (limits-port.ts). Only PostgreSQL keeps it; on libsql the one process's
   * own counter is the tenant's whole count.
   */
  limits?: LimitStore;
  /** Call batches by idempotency key (POST /v1/agents/:id/calls with an Idempotency-Key). */
  callBatches: CallBatchStore;
  /** Each tenant's settings document (GET/PUT /v1/settings: the pause settings). */
  tenantSettings: TenantSettingsStore;
  /** Workspace snapshots (POST /v1/agents/:id/snapshots): their rows; their files are the nodes'. */
  snapshots: SnapshotStore;
  /**
   * Wake-ups for the rare events other processes on the same database must hear at once (request
   * settles, mailbox posts, key revocations, agent deletions, configuration changes): in-process on
   * libsql, LISTEN/NOTIFY on PostgreSQL (wake-port.ts).
   */
  wake: WakeBus;
  /** Each agent's node and the nodes cordoned at run time (host/sandbox/nodes/placement.ts). */
  nodes: NodeStore;
  /** Flushes events, stops timers, closes the database. Idempotent. */
  close(): Promise<void>;
}
