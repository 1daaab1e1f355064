// The control plane application's inputs: the limits it enforces (ApiLimits, DEFAULT_LIMITS), the
// services it serves (AppDeps), and AppState, the one object createApp (./app.ts) builds from them
// and hands to the modules that wire the app (app-gauges.ts, app-admission.ts, app-routes.ts).
// Invariant: AppState is built once per app; its parts (limiter, fair scheduler, throttle) are
// shared by every registration that takes them, so one request holds at most one slot.
import type { BlockList } from 'node:net';
import type { AgentService } from '../agents/service.ts';
import type { EgressSettings } from '../egress/settings.ts';
import type { SandboxRuntime } from '../sandbox/runtimes.ts';
import type { SkillCatalog } from '../skills/catalog.ts';
import type { Store } from '../store/index.ts';
import type { ReplicaShare } from '../store/replica-share.ts';
import type { TenantDeletion } from '../tenants/deletion.ts';
import type { ScheduleService } from '../tools/builtin/index.ts';
import type { AuthThrottle } from './auth-throttle.ts';
import type { ConnectionGuard } from './connections.ts';
import type { FairScheduler } from './fair.ts';
import type { ReplicaDeps } from './forward/route.ts';
import type { Lifecycle } from './lifecycle.ts';
import type { Metrics } from './metrics.ts';
import type { NodeAdmin } from './routes/nodes.ts';

export interface ApiLimits {
  /** Largest JSON request body. Default 1 MiB. */
  maxJsonBytes: number;
  /** Largest file or archive upload. Default 64 MiB. */
  maxUploadBytes: number;
  /** Requests of one tenant in flight at once (streams included). Default 16. */
  tenantConcurrency: number;
  /** Archive uploads (PUT /v1/agents/:id/archive) of one tenant spooled at once (./upload-slots.ts). Default 2. */
  tenantArchiveUploads: number;
  /** Archive uploads spooled at once in all. Default 16. */
  archiveUploads: number;
  /** Deadline of ordinary requests (not call batches, not streams). Default 30 s. */
  requestTimeoutMs: number;
  /** Deadline of one call batch; the batch is cancelled after it. Default 10 min. */
  callTimeoutMs: number;
  /** Terminal WebSockets of one tenant open at once. Default 32. */
  tenantTerminals: number;
  /** Largest page of events (and step of an event stream) in bytes of event JSON. Default 1 MiB. */
  eventPageBytes: number;
  /** The workspace size an agent gets when it asks for none (DSH_WORKSPACE_MB), in MiB: what the `diskMb` quota counts for it. */
  workspaceMb: number;
  /** Main-thread time heavy requests may use per event-loop turn before they wait (./fair.ts); 0: off. Default 4 ms. */
  fairTurnMs: number;
}

export const DEFAULT_LIMITS: ApiLimits = {
  maxJsonBytes: 1024 * 1024,
  maxUploadBytes: 64 * 1024 * 1024,
  tenantConcurrency: 16,
  tenantArchiveUploads: 2,
  archiveUploads: 16,
  requestTimeoutMs: 30_000,
  callTimeoutMs: 600_000,
  tenantTerminals: 32,
  eventPageBytes: 1024 * 1024,
  fairTurnMs: 4,
  workspaceMb: 1024,
};

export interface AppDeps {
  startedAt: number;
  version: string;
  /** With `search`, GET /v1/agents/:id/usage and GET /v1/admin/workspaces are served. */
  store: Pick<Store, 'tenants' | 'events' | 'requests'> &
    Partial<Pick<Store, 'search' | 'callBatches' | 'agents'>>;
  agents: AgentService;
  /** Admin key for POST /v1/tenants; none turns that route off. */
  adminKey?: string;
  /** A key that opens GET /metrics and nothing else (the admin key opens it too); with neither, /metrics is off. */
  metricsKey?: string;
  /** Failed key attempts per source (./auth-throttle.ts). Default: one with its defaults. */
  authThrottle?: AuthThrottle;
  /** Proxies whose X-Forwarded-For names the client (./client-address.ts trustedProxies); default none. */
  trustedProxies?: BlockList;
  limits?: Partial<ApiLimits>;
  /** Default: a fresh registry. Pass one to share it with the agent service's observe hook. */
  metrics?: Metrics;
  /** Default: a fresh lifecycle (never shutting down unless begin() is called). */
  lifecycle?: Lifecycle;
  /** Live isolate worker processes, for /metrics. */
  isolateWorkers?: () => number;
  /** The warm pool's configured size and the sandboxes ready in it now, for /metrics. */
  pool?: () => { size: number; available: number };
  /** Bytes used and free on the file system holding the workspaces, for /metrics. */
  workspaceDisk?: () => { used: number; free: number };
  /** The HTTP server's connection admission (serve.ts); authenticated requests claim their connection. */
  connections?: ConnectionGuard;
  /** The agents' schedules (GET and DELETE /v1/agents/:id/schedules); none leaves those routes out. */
  schedules?: ScheduleService;
  /** Tenant deletion in the background (DELETE /v1/tenants/:id); none leaves that route out. */
  tenantDeletion?: TenantDeletion;
  /** Browser origins admitted to the MCP endpoints besides this machine's own (DSH_MCP_ORIGINS). */
  mcpOrigins?: readonly string[];
  /** The tenants' skill catalogs (/v1/skills); none leaves those routes out. */
  skills?: SkillCatalog;
  /** The tenants' egress settings (/v1/egress); none leaves those routes out. */
  egress?: EgressSettings;
  /** Turns of heavy requests on the event loop. Default: one with limits.fairTurnMs. */
  fair?: FairScheduler;
  /** Replicas: the live replicas the per-tenant request concurrency is shared over. None: all of it here. */
  limitShare?: ReplicaShare;
  /** Replicas (./forward/): forwarded requests checked, others' agents forwarded. None: one instance. */
  replicas?: ReplicaDeps;
  /** The sandbox runtimes the engine offers, for /v1/health. None: not reported. */
  runtimes?: () => Promise<readonly SandboxRuntime[]>;
  /** The nodes of DSH_NODES for the operator (GET /v1/nodes, cordons). None: the service's own engine. */
  nodes?: NodeAdmin;
  /**
   * Called when output flows to a client (an SSE event written, terminal output sent) or a
   * keystroke arrives on a terminal socket: serve.ts touches idle polling (../idle-poll.ts). None: nothing.
   */
  activity?: () => void;
}

/** What createApp builds once from AppDeps and the wiring modules share. */
export interface AppState {
  deps: AppDeps;
  limits: ApiLimits;
  metrics: Metrics;
  lifecycle: Lifecycle;
  throttle: AuthThrottle;
  fair: FairScheduler;
  connections: ConnectionGuard | undefined;
}
