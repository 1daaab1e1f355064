// The one place that reads environment variables. Precedence everywhere: explicit option >
// environment > default. Invalid configuration fails here, at start, with CONFIG_INVALID.

import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { trustedProxies } from './api/client-address.ts';
import { SandboxError } from './errors.ts';
import { parseSecretsKey } from './store/sealed.ts';

export interface Config {
  /** Address the API listens on. Default 127.0.0.1 (env DSH_HOST). */
  host: string;
  /** Port. Default 7070; 0 picks a free one (env DSH_PORT). */
  port: number;
  /** Folder for the libsql file, the default tenant's key and logs. Default ./.data (env DSH_DATA_DIR). */
  dataDir: string;
  /** libsql database file (default <dataDir>/store.db) (env DSH_DB). */
  database: string;
  /** Admin key for POST /v1/tenants; none means tenant creation only through the CLI (env DSH_ADMIN_KEY). */
  adminKey: string | undefined;
  /**
   * A key that opens GET /metrics and nothing else, for a scraper (the admin key opens it too); with
   * neither, /metrics answers 403. At least 24 characters (env DSH_METRICS_KEY).
   */
  metricsKey: string | undefined;
  /** Failed key attempts one client address may make per window; then 429 AUTH_THROTTLED. Default 10 (env DSH_AUTH_FAILURES). */
  authFailures: number;
  /** The window of authFailures, from an address's first failure, in ms. Default 60000 (env DSH_AUTH_FAILURE_WINDOW_MS). */
  authFailureWindowMs: number;
  /**
   * Reverse proxies (IP addresses or ip/prefix subnets) whose X-Forwarded-For names the client, for
   * limits per client address. Default none: the header is ignored (env DSH_TRUSTED_PROXIES, comma-separated).
   */
  trustedProxies: string[];
  /** Sandbox image tag; default: the one setup built for this checkout (env DSH_SANDBOX_IMAGE). */
  sandboxImage: string | undefined;
  /** The Docker engine's address (DOCKER_HOST); undefined: the local socket. */
  dockerHost: string | undefined;
  /** Warm pool size of started, unassigned sandboxes. Default 2 (env DSH_POOL_SIZE). */
  poolSize: number;
  /** Isolate worker processes. Default 2 (env DSH_ISOLATE_WORKERS). */
  isolateWorkers: number;
  /** Resident memory of one isolate worker, which bounds how many programs it holds at once (MB). */
  isolateWorkerMb: number;
  /** Requests of one tenant in flight at once; more answer 429. Default 16 (env DSH_TENANT_CONCURRENCY). */
  tenantConcurrency: number;
  /**
   * Main-thread time heavy requests (call batches) may use in one event-loop turn before they wait
   * their turn, per tenant in round robin, behind light ones; 0 turns that off. Default 4 ms
   * (env DSH_FAIR_TURN_MS).
   */
  fairTurnMs: number;
  /**
   * Niceness of the isolate worker processes (strangers' programs), so the control plane's thread
   * goes first when they compete for a core; 0 leaves them at the service's. Default 10
   * (env DSH_ISOLATE_NICE).
   */
  isolateNice: number;
  /** Largest file or archive upload in bytes. Default 64 MiB (env DSH_MAX_UPLOAD_BYTES). */
  maxUploadBytes: number;
  /** Deadline of one call batch in ms. Default 600000 (env DSH_CALL_TIMEOUT_MS). */
  callTimeoutMs: number;
  /** Open HTTP connections at once; more are refused. Default 1024 (env DSH_MAX_CONNECTIONS). */
  maxConnections: number;
  /**
   * Connections only clients that presented a valid key may use: connections without one hold at
   * most maxConnections minus this, the oldest giving way to newer ones. Default 64, at most a
   * quarter of maxConnections (env DSH_CONNECTION_RESERVE).
   */
  connectionReserve: number;
  /** Connections one tenant may hold; a request past that answers 429. Default 128 (env DSH_TENANT_CONNECTIONS). */
  tenantConnections: number;
  /** Terminal WebSockets one tenant may hold. Default 32 (env DSH_TENANT_TERMINALS). */
  tenantTerminals: number;
  /** Schedules (schedule_create) one agent may have. Default 32 (env DSH_SCHEDULES_PER_AGENT). */
  schedulesPerAgent: number;
  /** Shortest period of a recurring schedule, in seconds. Default 60 (env DSH_SCHEDULE_MIN_SECONDS). */
  scheduleMinSeconds: number;
  /** Skills one tenant's catalog may hold. Default 256 (env DSH_SKILLS_PER_TENANT). */
  skillsPerTenant: number;
  /** Bytes of all files of one skill package. Default 4 MiB (env DSH_SKILL_MAX_BYTES). */
  skillMaxBytes: number;
  /** Tasks one team's task board holds, completed ones included. Default 500 (env DSH_TEAM_BOARD_TASKS). */
  teamBoardTasks: number;
  /** Characters of one team task's description. Default 8000 (env DSH_TEAM_TASK_CHARS). */
  teamTaskChars: number;
  /** Write scopes of one team task. Default 32 (env DSH_TEAM_TASK_SCOPES). */
  teamTaskScopes: number;
  /** A new connection that sent nothing by then is closed. Default 5000 ms (env DSH_FIRST_BYTE_TIMEOUT_MS). */
  firstByteTimeoutMs: number;
  /** Time to send a complete request head; then 408 and closed. Default 10000 ms (env DSH_HEADERS_TIMEOUT_MS). */
  headersTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. Default 5000 ms (env DSH_KEEP_ALIVE_TIMEOUT_MS). */
  keepAliveTimeoutMs: number;
  /** How long shutdown lets in-flight calls finish before failing them. Default 10000 ms (env DSH_SHUTDOWN_GRACE_MS). */
  shutdownGraceMs: number;
  /**
   * Give every workspace its own size-limited file system (loop-mounted ext4; needs root and a
   * local engine). Default on; off keeps plain Docker volumes without any disk limit (env DSH_DISK_QUOTA=on|off).
   */
  diskQuota: boolean;
  /** Where workspace images and their mount points live. Default <dataDir>/workspaces (env DSH_WORKSPACES_DIR). */
  workspacesDir: string;
  /** Default workspace size in MiB; an agent may ask for another (sandbox.diskMb). Default 1024 (env DSH_WORKSPACE_MB). */
  workspaceMb: number;
  /** Workspaces of the default size made ahead (formatted, unmounted), so a cold create only mounts one. Default 2 (env DSH_WORKSPACE_SPARES). */
  workspaceSpares: number;
  /** Where archive uploads wait while they are checked; a disk, not a tmpfs. Default <dataDir>/spool (env DSH_SPOOL_DIR). */
  spoolDir: string;
  /**
   * Talk to each sandboxd over a unix socket of its container's own (bind-mounted read-only)
   * instead of the engine's attach stream: no dockerd or containerd-shim on the way. Default on
   * with a local engine (env DSH_SANDBOX_LINKS=on|off).
   */
  sandboxLinks: boolean;
  /** Where the containers' link folders live. Default <dataDir>/links (env DSH_LINKS_DIR). */
  linksDir: string;
  /**
   * How far the workspaces' limits may exceed the free host disk. 1 (default): a workspace is made
   * only if every workspace can still grow to its limit (env DSH_DISK_OVERCOMMIT).
   */
  diskOvercommit: number;
  /** Host disk kept free beyond what workspaces may still take, in MiB. Default 1024 (env DSH_DISK_RESERVE_MB). */
  diskReserveMb: number;
  /** CPU time of a run_code program's own work, in ms. Default 10000 (env DSH_CODE_CPU_MS). */
  codeCpuMs: number;
  /**
   * Wall-clock time of a run_code program, waiting on its tools included, in ms. Default 600000:
   * longer than an approval waits (5 min); at most callTimeoutMs (env DSH_CODE_WALL_MS).
   */
  codeWallMs: number;
  /** The most CPU time an agent may ask for (`codeMode.cpuMs`). Default 60000 (env DSH_CODE_CPU_MAX_MS). */
  codeCpuMaxMs: number;
  /** The most wall-clock time an agent may ask for (`codeMode.wallMs`). Default 3600000 (env DSH_CODE_WALL_MAX_MS). */
  codeWallMaxMs: number;
  /**
   * Bytes of durable log (events plus their stored payloads) each tenant may hold. A call whose
   * event does not fit is refused with STORE_BUDGET_EXCEEDED; results of admitted calls are kept,
   * past it without their large values (see host/store/event-log-core.ts). Default 512 MiB (env DSH_TENANT_LOG_BYTES).
   */
  tenantLogBytes: number;
  /** Largest page of `GET /v1/agents/:id/events`, in bytes of event JSON. Default 1 MiB (env DSH_EVENT_PAGE_BYTES). */
  eventPageBytes: number;
  /**
   * Browser origins besides this machine's own (localhost, 127.0.0.0/8, ::1) that may use the
   * agents' MCP endpoints; any other Origin is refused (DNS-rebinding protection). Default none
   * (env DSH_MCP_ORIGINS, comma-separated, e.g. `https://console.example.com`).
   */
  mcpOrigins: string[];
  /** Egress connections (and HTTP requests) one tenant may have open at once, its most. Default 32 (env DSH_EGRESS_TENANT_CONNECTIONS). */
  egressConnections: number;
  /** Egress bytes (both directions) one tenant may move per hour, its most. Default 1 GiB (env DSH_EGRESS_TENANT_BYTES_PER_HOUR). */
  egressBytesPerHour: number;
  /** Connections through sandboxd's egress proxy one agent's sandbox may have open at once; more wait, then get a 503. Default 16 (env DSH_EGRESS_SANDBOX_TUNNELS). */
  egressSandboxTunnels: number;
  /**
   * TEST AND DEVELOPMENT ONLY: non-public addresses the egress gateway may connect to anyway, as
   * `ip` or `ip:port` (`[ipv6]:port`), comma-separated; the tenant's allowlist still decides.
   * Default: none, so loopback, private, link-local and metadata addresses are always refused
   * (env DSH_EGRESS_ALLOW_HOSTS_FOR_TESTS).
   */
  egressTestHosts: Array<{ ip: string; port?: number }>;
  /**
   * A PEM file of CA certificates the egress gateway trusts for HTTPS upstreams besides Node's own
   * (a private CA; tests' loopback servers). Read at start. Default none (env DSH_EGRESS_CA_FILE).
   */
  egressCaFile: string | undefined;
  /** A SearXNG instance every tenant's web_search uses unless it set its own. Default none (env DSH_SEARCH_SEARXNG_URL). */
  searxngUrl: string | undefined;
  /** Largest response web_fetch reads, in bytes. Default 5 MiB (env DSH_WEB_FETCH_MAX_BYTES). */
  webFetchMaxBytes: number;
  /** Deadline of one web_fetch, redirects included, in ms. Default 30000 (env DSH_WEB_FETCH_TIMEOUT_MS). */
  webFetchTimeoutMs: number;
  /**
   * The key secrets are sealed with in the store (egress credentials, MCP servers' headers and
   * environments): 32 bytes in base64. Default: a key file next to the database, made once (env DSH_SECRETS_KEY).
   */
  secretsKey: Buffer | undefined;
  /** Live children and teammates one agent may have made. Default 16 (env DSH_CHILDREN_PER_AGENT). */
  childrenPerAgent: number;
  /** How deep child agents may nest (a top-level agent is 0). Default 3 (env DSH_CHILD_DEPTH). */
  childDepth: number;
  /** Children of one agent running at once. Default 8 (env DSH_CONCURRENT_CHILDREN). */
  concurrentChildren: number;
  /** Unread messages one agent's mailbox may hold. Default 256 (env DSH_MAILBOX_SIZE). */
  mailboxSize: number;
  /** Bytes of one message, report or child prompt. Default 65536 (env DSH_MESSAGE_BYTES). */
  messageBytes: number;
  /**
   * Product-provider bundles the client can run children with: each gets a `subagent_<name>`
   * alias (subagent_codex, subagent_claude_code). Default none (env DSH_SUBAGENT_PROVIDERS,
   * comma-separated, e.g. `codex,claude_code`).
   */
  subagentProviders: string[];
}

/** `ip`, `ip:port` or `[ipv6]:port` entries of DSH_EGRESS_ALLOW_HOSTS_FOR_TESTS; IP literals only. */
const testHostsFrom = (raw: string | undefined): Array<{ ip: string; port?: number }> => {
  if (raw === undefined || raw.trim() === '') return [];
  return raw.split(',').map((entry) => {
    const text = entry.trim();
    const match =
      /^\[([0-9a-fA-F:.]+)\](?::(\d{1,5}))?$/.exec(text) ?? /^([0-9.]+)(?::(\d{1,5}))?$/.exec(text);
    const ip = match?.[1];
    const port = match?.[2] === undefined ? undefined : Number(match[2]);
    if (ip === undefined || isIP(ip) === 0 || (port !== undefined && (port < 1 || port > 65535)))
      throw new SandboxError(
        'CONFIG_INVALID',
        `DSH_EGRESS_ALLOW_HOSTS_FOR_TESTS takes IP addresses as ip, ip:port or [ipv6]:port, got "${text}"`,
      );
    return port === undefined ? { ip } : { ip, port };
  });
};

const urlFrom = (name: string, raw: string | undefined): string | undefined => {
  if (raw === undefined || raw === '') return undefined;
  try {
    const url = new URL(raw);
    if (url.protocol === 'http:' || url.protocol === 'https:') return url.href;
  } catch {}
  throw new SandboxError('CONFIG_INVALID', `${name} must be an http or https URL, got "${raw}"`);
};

const ratioFrom = (name: string, raw: string | undefined, fallback: number): number => {
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0.1 || value > 100) {
    throw new SandboxError('CONFIG_INVALID', `${name} must be a number between 0.1 and 100, got "${raw}"`);
  }
  return value;
};

const switchFrom = (name: string, raw: string | undefined, fallback: boolean): boolean => {
  if (raw === undefined || raw === '') return fallback;
  if (/^(on|true|1|yes)$/i.test(raw)) return true;
  if (/^(off|false|0|no)$/i.test(raw)) return false;
  throw new SandboxError('CONFIG_INVALID', `${name} must be on or off, got "${raw}"`);
};

const intFrom = (
  name: string,
  raw: string | undefined,
  fallback: number,
  min: number,
  max: number,
): number => {
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new SandboxError(
      'CONFIG_INVALID',
      `${name} must be an integer between ${min} and ${max}, got "${raw}"`,
    );
  }
  return value;
};

/** A comma-separated list of http(s) origins; each is checked and spelled as URL.origin spells it. */
const originsFrom = (name: string, raw: string | undefined): string[] => {
  if (raw === undefined || raw.trim() === '') return [];
  return raw.split(',').map((entry) => {
    const text = entry.trim();
    let url: URL | undefined;
    try {
      url = new URL(text);
    } catch {}
    if (
      url === undefined ||
      (url.protocol !== 'http:' && url.protocol !== 'https:') ||
      url.origin !== text.replace(/\/$/, '')
    )
      throw new SandboxError(
        'CONFIG_INVALID',
        `${name} must list origins like https://host[:port], got "${text}"`,
      );
    return url.origin;
  });
};

const listFrom = (name: string, raw: string | undefined, item: RegExp): string[] => {
  if (raw === undefined || raw.trim() === '') return [];
  const items = [...new Set(raw.split(',').map((part) => part.trim()))].filter((part) => part !== '');
  const bad = items.find((part) => !item.test(part));
  if (bad !== undefined)
    throw new SandboxError(
      'CONFIG_INVALID',
      `${name} is a comma-separated list of names (lower-case letters, digits, "_"), got "${bad}"`,
    );
  return items;
};

/** A port as `--port` or DSH_PORT gives it: an integer 0-65535 (0 picks a free one). */
export const portFrom = (name: string, raw: string): number => {
  if (raw.trim() === '')
    throw new SandboxError('CONFIG_INVALID', `${name} must be an integer between 0 and 65535, got "${raw}"`);
  return intFrom(name, raw, 7070, 0, 65535);
};

/** DSH_ names read by setup, tests and benchmarks, not by the service. */
const NOT_SERVICE_SETTINGS = /^DSH_(BASE_IMAGE|NODE|VERBOSE|FUZZ_[A-Z_]+)$/;

/**
 * The DSH_* variables set in `env` that the service reads nowhere (a typo such as DSH_PROT would
 * otherwise pass silently): everything loadConfig does not read, but the names setup, tests and
 * benchmarks use. For a warning at start; the configuration is valid without them.
 */
export const unknownSettings = (env: NodeJS.ProcessEnv = process.env): string[] => {
  const read = new Set<string>();
  const recording = new Proxy(env, {
    get(target, key) {
      if (typeof key === 'string') read.add(key);
      return Reflect.get(target, key);
    },
  });
  try {
    loadConfig({}, recording);
  } catch {
    // An invalid value is loadConfig's own error, reported when the service loads it.
  }
  return Object.keys(env)
    .filter((name) => name.startsWith('DSH_') && !read.has(name) && !NOT_SERVICE_SETTINGS.test(name))
    .sort();
};

/** The admin key opens every tenant's agents: one short enough to guess is refused at start. */
export const ADMIN_KEY_MIN_LENGTH = 24;

function adminKeyFrom(key: string | undefined, name = 'DSH_ADMIN_KEY'): string | undefined {
  if (key !== undefined && key.length < ADMIN_KEY_MIN_LENGTH)
    throw new SandboxError(
      'CONFIG_INVALID',
      `${name} must be at least ${ADMIN_KEY_MIN_LENGTH} characters (it is ${key.length}); use a random one, e.g. from \`openssl rand -hex 32\``,
    );
  return key;
}

/** DSH_TRUSTED_PROXIES: IP addresses or subnets, each checked here so that a typo fails at start. */
const proxiesFrom = (raw: string | undefined): string[] => {
  if (raw === undefined || raw.trim() === '') return [];
  const entries = raw
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  try {
    trustedProxies(entries);
  } catch (e) {
    throw new SandboxError('CONFIG_INVALID', `DSH_TRUSTED_PROXIES: ${(e as Error).message}`);
  }
  return entries;
};

export const loadConfig = (
  overrides: Partial<Config> = {},
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): Config => {
  const dataDir = resolve(cwd, overrides.dataDir ?? env.DSH_DATA_DIR ?? '.data');
  const maxConnections =
    overrides.maxConnections ?? intFrom('DSH_MAX_CONNECTIONS', env.DSH_MAX_CONNECTIONS, 1024, 16, 1_000_000);
  const connectionReserve =
    overrides.connectionReserve ??
    intFrom(
      'DSH_CONNECTION_RESERVE',
      env.DSH_CONNECTION_RESERVE,
      Math.min(64, Math.floor(maxConnections / 4)),
      0,
      1_000_000,
    );
  if (connectionReserve >= maxConnections)
    throw new SandboxError(
      'CONFIG_INVALID',
      `DSH_CONNECTION_RESERVE (${connectionReserve}) must be below DSH_MAX_CONNECTIONS (${maxConnections})`,
    );
  const timeout = (name: string, fallback: number): number =>
    intFrom(name, env[name], fallback, 100, 600_000);
  const codeCpuMaxMs =
    overrides.codeCpuMaxMs ?? intFrom('DSH_CODE_CPU_MAX_MS', env.DSH_CODE_CPU_MAX_MS, 60_000, 10, 3_600_000);
  const codeWallMaxMs =
    overrides.codeWallMaxMs ??
    intFrom('DSH_CODE_WALL_MAX_MS', env.DSH_CODE_WALL_MAX_MS, 3_600_000, 100, 86_400_000);
  const codeCpuMs =
    overrides.codeCpuMs ??
    intFrom('DSH_CODE_CPU_MS', env.DSH_CODE_CPU_MS, Math.min(10_000, codeCpuMaxMs), 10, codeCpuMaxMs);
  const codeWallMs =
    overrides.codeWallMs ??
    intFrom('DSH_CODE_WALL_MS', env.DSH_CODE_WALL_MS, Math.min(600_000, codeWallMaxMs), 100, codeWallMaxMs);
  return {
    host: overrides.host ?? env.DSH_HOST ?? '127.0.0.1',
    port: overrides.port ?? intFrom('DSH_PORT', env.DSH_PORT, 7070, 0, 65535),
    dataDir,
    database: overrides.database ?? env.DSH_DB ?? resolve(dataDir, 'store.db'),
    adminKey: adminKeyFrom(overrides.adminKey ?? (env.DSH_ADMIN_KEY || undefined)),
    metricsKey: adminKeyFrom(overrides.metricsKey ?? (env.DSH_METRICS_KEY || undefined), 'DSH_METRICS_KEY'),
    authFailures:
      overrides.authFailures ?? intFrom('DSH_AUTH_FAILURES', env.DSH_AUTH_FAILURES, 10, 1, 1_000_000),
    authFailureWindowMs:
      overrides.authFailureWindowMs ??
      intFrom('DSH_AUTH_FAILURE_WINDOW_MS', env.DSH_AUTH_FAILURE_WINDOW_MS, 60_000, 1000, 86_400_000),
    trustedProxies: overrides.trustedProxies ?? proxiesFrom(env.DSH_TRUSTED_PROXIES),
    sandboxImage: overrides.sandboxImage ?? (env.DSH_SANDBOX_IMAGE || undefined),
    dockerHost: overrides.dockerHost ?? (env.DOCKER_HOST || undefined),
    poolSize: overrides.poolSize ?? intFrom('DSH_POOL_SIZE', env.DSH_POOL_SIZE, 2, 0, 64),
    isolateWorkers:
      overrides.isolateWorkers ?? intFrom('DSH_ISOLATE_WORKERS', env.DSH_ISOLATE_WORKERS, 2, 1, 64),
    isolateWorkerMb:
      overrides.isolateWorkerMb ??
      intFrom('DSH_ISOLATE_WORKER_MB', env.DSH_ISOLATE_WORKER_MB, 1024, 256, 65_536),
    tenantConcurrency:
      overrides.tenantConcurrency ??
      intFrom('DSH_TENANT_CONCURRENCY', env.DSH_TENANT_CONCURRENCY, 16, 1, 10_000),
    maxUploadBytes:
      overrides.maxUploadBytes ??
      intFrom('DSH_MAX_UPLOAD_BYTES', env.DSH_MAX_UPLOAD_BYTES, 64 * 1024 * 1024, 1024, 2 ** 40),
    callTimeoutMs:
      overrides.callTimeoutMs ??
      intFrom('DSH_CALL_TIMEOUT_MS', env.DSH_CALL_TIMEOUT_MS, 600_000, 1000, 86_400_000),
    maxConnections,
    connectionReserve,
    tenantConnections:
      overrides.tenantConnections ??
      intFrom('DSH_TENANT_CONNECTIONS', env.DSH_TENANT_CONNECTIONS, 128, 1, 1_000_000),
    tenantTerminals:
      overrides.tenantTerminals ?? intFrom('DSH_TENANT_TERMINALS', env.DSH_TENANT_TERMINALS, 32, 1, 10_000),
    schedulesPerAgent:
      overrides.schedulesPerAgent ??
      intFrom('DSH_SCHEDULES_PER_AGENT', env.DSH_SCHEDULES_PER_AGENT, 32, 1, 10_000),
    scheduleMinSeconds:
      overrides.scheduleMinSeconds ??
      intFrom('DSH_SCHEDULE_MIN_SECONDS', env.DSH_SCHEDULE_MIN_SECONDS, 60, 1, 86_400),
    skillsPerTenant:
      overrides.skillsPerTenant ??
      intFrom('DSH_SKILLS_PER_TENANT', env.DSH_SKILLS_PER_TENANT, 256, 1, 100_000),
    skillMaxBytes:
      overrides.skillMaxBytes ??
      intFrom('DSH_SKILL_MAX_BYTES', env.DSH_SKILL_MAX_BYTES, 4 * 1024 * 1024, 1024, 256 * 1024 * 1024),
    teamBoardTasks:
      overrides.teamBoardTasks ?? intFrom('DSH_TEAM_BOARD_TASKS', env.DSH_TEAM_BOARD_TASKS, 500, 1, 100_000),
    teamTaskChars:
      overrides.teamTaskChars ??
      intFrom('DSH_TEAM_TASK_CHARS', env.DSH_TEAM_TASK_CHARS, 8000, 100, 1_000_000),
    teamTaskScopes:
      overrides.teamTaskScopes ?? intFrom('DSH_TEAM_TASK_SCOPES', env.DSH_TEAM_TASK_SCOPES, 32, 1, 1000),
    fairTurnMs: overrides.fairTurnMs ?? intFrom('DSH_FAIR_TURN_MS', env.DSH_FAIR_TURN_MS, 4, 0, 1000),
    isolateNice: overrides.isolateNice ?? intFrom('DSH_ISOLATE_NICE', env.DSH_ISOLATE_NICE, 10, 0, 19),
    firstByteTimeoutMs: overrides.firstByteTimeoutMs ?? timeout('DSH_FIRST_BYTE_TIMEOUT_MS', 5000),
    headersTimeoutMs: overrides.headersTimeoutMs ?? timeout('DSH_HEADERS_TIMEOUT_MS', 10_000),
    keepAliveTimeoutMs: overrides.keepAliveTimeoutMs ?? timeout('DSH_KEEP_ALIVE_TIMEOUT_MS', 5000),
    shutdownGraceMs:
      overrides.shutdownGraceMs ??
      intFrom('DSH_SHUTDOWN_GRACE_MS', env.DSH_SHUTDOWN_GRACE_MS, 10_000, 0, 600_000),
    diskQuota: overrides.diskQuota ?? switchFrom('DSH_DISK_QUOTA', env.DSH_DISK_QUOTA, true),
    workspacesDir: resolve(
      cwd,
      overrides.workspacesDir ?? env.DSH_WORKSPACES_DIR ?? resolve(dataDir, 'workspaces'),
    ),
    workspaceMb:
      overrides.workspaceMb ?? intFrom('DSH_WORKSPACE_MB', env.DSH_WORKSPACE_MB, 1024, 16, 16 * 1024 * 1024),
    workspaceSpares:
      overrides.workspaceSpares ?? intFrom('DSH_WORKSPACE_SPARES', env.DSH_WORKSPACE_SPARES, 2, 0, 64),
    spoolDir: resolve(cwd, overrides.spoolDir ?? env.DSH_SPOOL_DIR ?? resolve(dataDir, 'spool')),
    sandboxLinks: overrides.sandboxLinks ?? switchFrom('DSH_SANDBOX_LINKS', env.DSH_SANDBOX_LINKS, true),
    linksDir: resolve(cwd, overrides.linksDir ?? env.DSH_LINKS_DIR ?? resolve(dataDir, 'links')),
    diskOvercommit: overrides.diskOvercommit ?? ratioFrom('DSH_DISK_OVERCOMMIT', env.DSH_DISK_OVERCOMMIT, 1),
    diskReserveMb:
      overrides.diskReserveMb ?? intFrom('DSH_DISK_RESERVE_MB', env.DSH_DISK_RESERVE_MB, 1024, 0, 2 ** 30),
    codeCpuMs,
    codeWallMs,
    codeCpuMaxMs,
    codeWallMaxMs,
    tenantLogBytes:
      overrides.tenantLogBytes ??
      intFrom('DSH_TENANT_LOG_BYTES', env.DSH_TENANT_LOG_BYTES, 512 * 1024 * 1024, 1024 * 1024, 2 ** 50),
    eventPageBytes:
      overrides.eventPageBytes ??
      intFrom('DSH_EVENT_PAGE_BYTES', env.DSH_EVENT_PAGE_BYTES, 1024 * 1024, 64 * 1024, 256 * 1024 * 1024),
    mcpOrigins: overrides.mcpOrigins ?? originsFrom('DSH_MCP_ORIGINS', env.DSH_MCP_ORIGINS),
    secretsKey:
      overrides.secretsKey ?? (env.DSH_SECRETS_KEY ? parseSecretsKey(env.DSH_SECRETS_KEY) : undefined),
    egressConnections:
      overrides.egressConnections ??
      intFrom('DSH_EGRESS_TENANT_CONNECTIONS', env.DSH_EGRESS_TENANT_CONNECTIONS, 32, 1, 100_000),
    egressBytesPerHour:
      overrides.egressBytesPerHour ??
      intFrom(
        'DSH_EGRESS_TENANT_BYTES_PER_HOUR',
        env.DSH_EGRESS_TENANT_BYTES_PER_HOUR,
        2 ** 30,
        1024,
        2 ** 50,
      ),
    egressSandboxTunnels:
      overrides.egressSandboxTunnels ??
      intFrom('DSH_EGRESS_SANDBOX_TUNNELS', env.DSH_EGRESS_SANDBOX_TUNNELS, 16, 1, 1024),
    egressTestHosts: overrides.egressTestHosts ?? testHostsFrom(env.DSH_EGRESS_ALLOW_HOSTS_FOR_TESTS),
    egressCaFile:
      overrides.egressCaFile ?? (env.DSH_EGRESS_CA_FILE ? resolve(cwd, env.DSH_EGRESS_CA_FILE) : undefined),
    searxngUrl: overrides.searxngUrl ?? urlFrom('DSH_SEARCH_SEARXNG_URL', env.DSH_SEARCH_SEARXNG_URL),
    webFetchMaxBytes:
      overrides.webFetchMaxBytes ??
      intFrom(
        'DSH_WEB_FETCH_MAX_BYTES',
        env.DSH_WEB_FETCH_MAX_BYTES,
        5 * 1024 * 1024,
        1024,
        256 * 1024 * 1024,
      ),
    webFetchTimeoutMs:
      overrides.webFetchTimeoutMs ??
      intFrom('DSH_WEB_FETCH_TIMEOUT_MS', env.DSH_WEB_FETCH_TIMEOUT_MS, 30_000, 1000, 600_000),
    childrenPerAgent:
      overrides.childrenPerAgent ??
      intFrom('DSH_CHILDREN_PER_AGENT', env.DSH_CHILDREN_PER_AGENT, 16, 1, 10_000),
    childDepth: overrides.childDepth ?? intFrom('DSH_CHILD_DEPTH', env.DSH_CHILD_DEPTH, 3, 1, 16),
    concurrentChildren:
      overrides.concurrentChildren ??
      intFrom('DSH_CONCURRENT_CHILDREN', env.DSH_CONCURRENT_CHILDREN, 8, 1, 10_000),
    mailboxSize:
      overrides.mailboxSize ?? intFrom('DSH_MAILBOX_SIZE', env.DSH_MAILBOX_SIZE, 256, 1, 1_000_000),
    messageBytes:
      overrides.messageBytes ??
      intFrom('DSH_MESSAGE_BYTES', env.DSH_MESSAGE_BYTES, 64 * 1024, 256, 16 * 1024 * 1024),
    subagentProviders:
      overrides.subagentProviders ??
      listFrom('DSH_SUBAGENT_PROVIDERS', env.DSH_SUBAGENT_PROVIDERS, /^[a-z][a-z0-9_]{0,31}$/),
  };
};
