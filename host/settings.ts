// Every setting of the service, as one table: its Config key, environment variable (and
// command-line flag), kind, default, range, section and help. The table drives parsing
// (config.ts loadConfig), `--help` (settings-text.ts) and docs/configuration.md (written by
// `node scripts/docs-settings.ts`; tests/unit/config.test.ts fails when the three disagree).
// A setting's default or range may depend on settings earlier in the table (the reserve on the
// connection cap, the code budgets on their maxima, paths on the data directory): entries are read
// in table order. Nothing here reads the environment; config.ts hands each setting its raw text.
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { SandboxError } from './errors.ts';
import { parseReplicaId, parseReplicaUrl } from './replica.ts';
import { parseSecretsKey } from './store/sealed.ts';
import { trustedProxies } from './trusted-proxies.ts';

/** Where a setting is listed in --help and the docs. */
export type Section =
  | 'service'
  | 'sandboxes'
  | 'workspaces'
  | 'code mode'
  | 'plugins'
  | 'requests and connections'
  | 'tenants and agents'
  | 'teams'
  | 'egress';

/** What a setting's parse and default see: the working directory and the settings read before it. */
export interface SettingContext {
  cwd: string;
  earlier: Readonly<Record<string, unknown>>;
}

export interface Setting<T> {
  /** The environment variable. */
  env: string;
  /** The command-line option of `serve`, when there is one. */
  flag?: string;
  section: Section;
  /** One line for --help. */
  help: string;
  /** The docs' text (markdown); default: `help`. */
  doc?: string;
  /** The default as --help and the docs spell it. */
  shown: string;
  /** The value of a non-empty raw text; CONFIG_INVALID naming the setting when it is not one. */
  parse(raw: string, context: SettingContext): T;
  /** The value when nothing sets it. */
  fallback(context: SettingContext): T;
  /** Checks (and normalizes) a value from any source, an explicit option included. Default: as is. */
  adopt?(value: T, context: SettingContext): T;
}

const invalid = (message: string): SandboxError => new SandboxError('CONFIG_INVALID', message);

type Common = Pick<Setting<unknown>, 'env' | 'flag' | 'section' | 'help' | 'doc'>;
type Dynamic<T> = T | ((earlier: Readonly<Record<string, unknown>>) => T);
const settle = <T>(v: Dynamic<T>, earlier: Readonly<Record<string, unknown>>): T =>
  typeof v === 'function' ? (v as (e: Readonly<Record<string, unknown>>) => T)(earlier) : v;

/** An integer in [min, max]; bounds and default may depend on earlier settings. */
export function int(
  spec: Common & { default: Dynamic<number>; min: number; max: Dynamic<number>; shown?: string },
): Setting<number> {
  const check = (value: number, raw: string, earlier: Readonly<Record<string, unknown>>): number => {
    const max = settle(spec.max, earlier);
    if (!Number.isInteger(value) || value < spec.min || value > max)
      throw invalid(`${spec.env} must be an integer between ${spec.min} and ${max}, got "${raw}"`);
    return value;
  };
  return {
    ...spec,
    shown: spec.shown ?? `\`${String(spec.default)}\``,
    parse: (raw, { earlier }) => check(Number(raw), raw, earlier),
    fallback: ({ earlier }) => settle(spec.default, earlier),
  };
}

/** on | off (also true/false, 1/0, yes/no). */
export function toggle(spec: Common & { default: boolean }): Setting<boolean> {
  return {
    ...spec,
    shown: spec.default ? '`on`' : '`off`',
    parse(raw) {
      if (/^(on|true|1|yes)$/i.test(raw)) return true;
      if (/^(off|false|0|no)$/i.test(raw)) return false;
      throw invalid(`${spec.env} must be on or off, got "${raw}"`);
    },
    fallback: () => spec.default,
  };
}

/** A number between 0.1 and 100. */
export function ratio(spec: Common & { default: number }): Setting<number> {
  return {
    ...spec,
    shown: `\`${spec.default}\``,
    parse(raw) {
      const value = Number(raw);
      if (!Number.isFinite(value) || value < 0.1 || value > 100)
        throw invalid(`${spec.env} must be a number between 0.1 and 100, got "${raw}"`);
      return value;
    },
    fallback: () => spec.default,
  };
}

/** Free text; `undefined` when unset and no default. */
export function text(spec: Common & { shown: string; default: Dynamic<string> }): Setting<string>;
export function text(spec: Common & { shown: string }): Setting<string | undefined>;
export function text(
  spec: Common & { shown: string; default?: Dynamic<string> },
): Setting<string | undefined> {
  return {
    ...spec,
    parse: (raw) => raw,
    fallback: ({ earlier }) => (spec.default === undefined ? undefined : settle(spec.default, earlier)),
  };
}

/** A file or folder path, resolved against the working directory whatever its source. */
export function path(
  spec: Common & { shown: string; default: (earlier: Readonly<Record<string, unknown>>) => string },
): Setting<string>;
export function path(spec: Common & { shown: string }): Setting<string | undefined>;
export function path(
  spec: Common & { shown: string; default?: (earlier: Readonly<Record<string, unknown>>) => string },
): Setting<string | undefined> {
  return {
    ...spec,
    parse: (raw) => raw,
    fallback: ({ earlier }) => spec.default?.(earlier),
    adopt: (value, { cwd }) => (value === undefined ? undefined : resolve(cwd, value)),
  };
}

/** An http or https URL. */
export function url(spec: Common): Setting<string | undefined> {
  return {
    ...spec,
    shown: 'none',
    parse(raw) {
      try {
        const parsed = new URL(raw);
        if (parsed.protocol === 'http:' || parsed.protocol === 'https:') return parsed.href;
      } catch {}
      throw invalid(`${spec.env} must be an http or https URL, got "${raw}"`);
    },
    fallback: () => undefined,
  };
}

/** A comma-separated list of http(s) origins, each spelled as URL.origin spells it. */
export function origins(spec: Common): Setting<string[]> {
  return {
    ...spec,
    shown: 'none',
    parse: (raw) =>
      listItems(raw).map((item) => {
        let parsed: URL | undefined;
        try {
          parsed = new URL(item);
        } catch {}
        if (
          parsed === undefined ||
          (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') ||
          parsed.origin !== item.replace(/\/$/, '')
        )
          throw invalid(`${spec.env} must list origins like https://host[:port], got "${item}"`);
        return parsed.origin;
      }),
    fallback: () => [],
  };
}

/** A comma-separated list of names (lower-case letters, digits, "_"), each once. */
export function names(spec: Common): Setting<string[]> {
  return {
    ...spec,
    shown: 'none',
    parse(raw) {
      const items = [...new Set(listItems(raw))];
      const bad = items.find((item) => !/^[a-z][a-z0-9_]{0,31}$/.test(item));
      if (bad !== undefined)
        throw invalid(
          `${spec.env} is a comma-separated list of names (lower-case letters, digits, "_"), got "${bad}"`,
        );
      return items;
    },
    fallback: () => [],
  };
}

/** `name=https://host:port` entries (a node's name: lower-case letters, digits, "-"), each name once. */
function nodeList(spec: Common): Setting<Array<{ name: string; url: string }>> {
  return {
    ...spec,
    shown: 'none',
    parse(raw) {
      const out: Array<{ name: string; url: string }> = [];
      for (const item of listItems(raw)) {
        const at = item.indexOf('=');
        const name = item.slice(0, at);
        let parsed: URL | undefined;
        try {
          parsed = new URL(item.slice(at + 1));
        } catch {}
        if (
          at < 0 ||
          !/^[a-z][a-z0-9-]{0,31}$/.test(name) ||
          parsed?.protocol !== 'https:' ||
          parsed.port === ''
        )
          throw invalid(`${spec.env} lists nodes as name=https://host:port, got "${item}"`);
        if (out.some((n) => n.name === name)) throw invalid(`${spec.env} names node "${name}" twice`);
        out.push({ name, url: parsed.origin });
      }
      return out;
    },
    fallback: () => [],
  };
}

/** `*` (every tenant) or comma-separated tenant ids; none by default. */
function tenantList(spec: Common): Setting<'*' | string[]> {
  return {
    ...spec,
    shown: 'none',
    parse(raw) {
      if (raw.trim() === '*') return '*';
      const items = [...new Set(listItems(raw))];
      const bad = items.find((item) => !/^[A-Za-z0-9_-]{1,64}$/.test(item));
      if (bad !== undefined)
        throw invalid(`${spec.env} is * or a comma-separated list of tenant ids, got "${bad}"`);
      return items;
    },
    fallback: () => [],
  };
}

/** Comma-separated node names (as DSH_NODES spells them); none by default. */
function nameList(spec: Common): Setting<string[]> {
  return {
    ...spec,
    shown: 'none',
    parse(raw) {
      const items = [...new Set(listItems(raw))];
      const bad = items.find((item) => !/^[a-z][a-z0-9-]{0,31}$/.test(item));
      if (bad !== undefined)
        throw invalid(`${spec.env} is a comma-separated list of node names, got "${bad}"`);
      return items;
    },
    fallback: () => [],
  };
}

const listItems = (raw: string): string[] =>
  raw
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');

/** `ip`, `ip:port` or `[ipv6]:port` entries; IP literals only. */
function testHosts(spec: Common): Setting<Array<{ ip: string; port?: number }>> {
  return {
    ...spec,
    shown: 'none',
    parse: (raw) =>
      raw.split(',').map((entry) => {
        const item = entry.trim();
        const match =
          /^\[([0-9a-fA-F:.]+)\](?::(\d{1,5}))?$/.exec(item) ?? /^([0-9.]+)(?::(\d{1,5}))?$/.exec(item);
        const ip = match?.[1];
        const port = match?.[2] === undefined ? undefined : Number(match[2]);
        if (ip === undefined || isIP(ip) === 0 || (port !== undefined && (port < 1 || port > 65535)))
          throw invalid(`${spec.env} takes IP addresses as ip, ip:port or [ipv6]:port, got "${item}"`);
        return port === undefined ? { ip } : { ip, port };
      }),
    fallback: () => [],
  };
}

/** The admin key opens every tenant's agents: one short enough to guess is refused at start. */
export const ADMIN_KEY_MIN_LENGTH = 24;

/** A key that opens much (every tenant, or the metrics): one short enough to guess is refused. */
function longKey(env: string, key: string | undefined): string | undefined {
  if (key !== undefined && key.length < ADMIN_KEY_MIN_LENGTH)
    throw invalid(
      `${env} must be at least ${ADMIN_KEY_MIN_LENGTH} characters (it is ${key.length}); use a random one, e.g. from \`openssl rand -hex 32\``,
    );
  return key;
}

/** Reverse proxies as IP addresses or ip/prefix subnets, checked as the throttle will use them. */
function proxies(spec: Common): Setting<string[]> {
  return {
    ...spec,
    shown: 'none',
    parse(raw) {
      const entries = listItems(raw);
      try {
        trustedProxies(entries);
      } catch (e) {
        throw invalid(`${spec.env}: ${(e as Error).message}`);
      }
      return entries;
    },
    fallback: () => [],
  };
}

const timeoutMs = (spec: Common & { default: number }): Setting<number> =>
  int({ ...spec, min: 100, max: 600_000 });

const MiB = 1024 * 1024;

/** The table. Its order is the order of --help and the docs, and the order settings are read in. */
export const SETTINGS = {
  host: text({
    env: 'DSH_HOST',
    flag: '--host',
    section: 'service',
    shown: '`127.0.0.1`',
    default: '127.0.0.1',
    help: 'listen address',
  }),
  port: int({
    env: 'DSH_PORT',
    flag: '--port',
    section: 'service',
    default: 7070,
    min: 0,
    max: 65535,
    help: 'port (0 picks a free one)',
    doc: 'port (`0` picks a free one)',
  }),
  dataDir: path({
    env: 'DSH_DATA_DIR',
    flag: '--data-dir',
    section: 'service',
    shown: '`./.data`',
    default: () => '.data',
    help: "store (with this instance's id), default tenant key, dockerd log, Node's compile cache (`compile-cache/`: the service's modules stripped and compiled, for a quicker next start), sandboxd's bundle (`sandboxd-bundle/`, kept under a hash of its sources: `npm start` finds the image's tag without rebuilding it)",
  }),
  database: text({
    env: 'DSH_DB',
    section: 'service',
    shown: '`<data dir>/store.db`',
    default: (c) => resolve(c.dataDir as string, 'store.db'),
    help: 'the store: a libsql database file (WAL), or a postgres:// URL',
    doc: 'the store: a libsql database file (WAL; a path or `file:` URL), or a `postgres://` / `postgresql://` URL (libpq form: user, password, `host` or `?host=<socket dir>`, database, `sslmode`), which selects the PostgreSQL backend (docs/configuration.md, "The store on PostgreSQL")',
  }),
  databasePool: int({
    env: 'DSH_DB_POOL',
    section: 'service',
    default: 10,
    min: 2,
    max: 1000,
    help: 'connections to PostgreSQL this process may hold, one of them the lock that keeps a second service off the database (libsql: unused)',
  }),
  adminKey: {
    ...text({
      env: 'DSH_ADMIN_KEY',
      section: 'service',
      shown: 'none',
      help: `bearer key of the admin routes and the operator view, ${ADMIN_KEY_MIN_LENGTH}+ characters (unset: tenants only via the CLI)`,
      doc: 'bearer key of the admin routes (`/v1/tenants`, `/v1/admin/*`) and the operator view; at least 24 characters, else `CONFIG_INVALID` at start (unset: tenants only via the CLI)',
    }),
    adopt: (key: string | undefined): string | undefined => longKey('DSH_ADMIN_KEY', key),
  } satisfies Setting<string | undefined>,
  metricsKey: {
    ...text({
      env: 'DSH_METRICS_KEY',
      section: 'service',
      shown: 'none',
      help: `bearer key of GET /metrics and nothing else, ${ADMIN_KEY_MIN_LENGTH}+ characters (with neither it nor the admin key, /metrics answers 403)`,
      doc: 'bearer key of `GET /metrics` and nothing else, for a scraper such as Prometheus (`authorization: { credentials: <key> }` in its scrape config); at least 24 characters. With neither it nor `DSH_ADMIN_KEY` set, `/metrics` answers 403',
    }),
    adopt: (key: string | undefined): string | undefined => longKey('DSH_METRICS_KEY', key),
  } satisfies Setting<string | undefined>,
  secretsKey: {
    env: 'DSH_SECRETS_KEY',
    section: 'service',
    shown: 'a key file next to the libsql database; on PostgreSQL `<data dir>/secrets.key`',
    help: 'the key secrets are sealed with in the store: 32 bytes in base64',
    doc: "32 bytes in base64 (`openssl rand -base64 32`): the key egress credentials and MCP servers' headers and environments are sealed with in the store. Replicas sharing one PostgreSQL store must all be given the same key",
    parse: (raw: string): Buffer | undefined => parseSecretsKey(raw),
    fallback: (): Buffer | undefined => undefined,
  } satisfies Setting<Buffer | undefined>,
  replicaUrl: {
    env: 'DSH_REPLICA_URL',
    section: 'service',
    shown: '`http://<host>:<port>` of the listen address (a wildcard address: loopback)',
    help: 'the base URL the other replicas on this store reach this one at (requests for its agents are forwarded there)',
    doc: 'the base URL (`http://host:port`, or `https://`, no path) the other replicas sharing this store reach this one at: a request that reaches another replica for an agent this one owns is forwarded there, signed with a key derived from `DSH_SECRETS_KEY`. Unset, it is made from `DSH_HOST` and the port the server got, a wildcard address (`0.0.0.0`, `::`) becoming loopback: **set it when replicas run on several machines**',
    parse: (raw: string): string | undefined => parseReplicaUrl(raw),
    fallback: (): string | undefined => undefined,
    adopt: (value: string | undefined): string | undefined =>
      value === undefined ? undefined : parseReplicaUrl(value),
  } satisfies Setting<string | undefined>,
  replicaId: {
    env: 'DSH_REPLICA_ID',
    section: 'service',
    shown: 'made once per data directory (`<data dir>/replica-id`: the host name and a random part)',
    help: "this replica's name among the replicas on this store (letters, digits, . _ : -; at most 64)",
    doc: "this replica's name among the replicas sharing this store: it signs the requests it forwards and names it in logs (letters, digits, `.`, `_`, `:`, `-`; at most 64). Unset, the one made for its data directory the first time (the host name and a random part, kept in `<data dir>/replica-id`). Two running replicas must never share one: a replica that starts under an id takes the families of any earlier process under that id at once (it counts it as its own previous life, crashed or replaced)",
    parse: (raw: string): string | undefined => parseReplicaId(raw),
    fallback: (): string | undefined => undefined,
    adopt: (value: string | undefined): string | undefined =>
      value === undefined ? undefined : parseReplicaId(value),
  } satisfies Setting<string | undefined>,
  replicaLeaseMs: int({
    env: 'DSH_REPLICA_LEASE_MS',
    section: 'service',
    default: 15_000,
    min: 1_000,
    max: 600_000,
    help: 'how long a replica holds an agent family without renewing it (renewed every fifth of it)',
    doc: "replicas on PostgreSQL: how long a replica's hold on an agent family lasts without renewal (it renews every fifth of it). When a replica dies, another takes its families over once this has passed: shorter fails over faster, at more renewals and a greater chance that a paused replica (a long garbage collection, a stalled VM) loses its families and has its running calls ended INTERRUPTED",
  }),
  shutdownGraceMs: int({
    env: 'DSH_SHUTDOWN_GRACE_MS',
    section: 'service',
    default: 10_000,
    min: 0,
    max: 600_000,
    help: 'how long shutdown lets running calls finish',
  }),
  idlePoll: toggle({
    env: 'DSH_IDLE_POLL',
    section: 'service',
    default: true,
    help: 'while calls come and go, idle CPUs poll instead of halting (a CPU latency request of 0 µs; needs write access to /dev/cpu_dma_latency); a node agent too, while it relays them',
    doc: "from a request's arrival, its answer, a program's tool call or output sent to a client (an SSE event, terminal output; not a stream's heartbeat) until `DSH_IDLE_POLL_LINGER_MS` passed with none, the service holds a Linux CPU latency request of 0 µs (PM QoS, `/dev/cpu_dma_latency`), so idle CPUs poll instead of halting and each hop of a call (isolate worker, service, sandboxd, the log's writer) wakes its process without an interrupt through the hypervisor: on a VM guest whose idle CPUs halt at once, 20 sequential `tools.read` in a program 21-22 → 14-15 ms (docs/performance.md, round thirteen). It costs the time idle CPUs spend polling while the service is busy; `off` on hosts where that time belongs to others. Needs write access to the device (root); without it the service runs as it would with `off`. The kernel drops the request when the service exits. A node agent (`dsh-node`) holds it the same way, from each call it relays and each chunk it splices between a control plane and a sandbox (not the control plane's health probes); `GET /v1/nodes` shows its state (`capacity.idlePoll`; docs/nodes.md)",
  }),
  idlePollLingerMs: int({
    env: 'DSH_IDLE_POLL_LINGER_MS',
    section: 'service',
    default: 10,
    min: 0,
    max: 60_000,
    help: 'how long idle CPUs go on polling after the last request, answer, tool call or output sent (on a node agent: relayed call or chunk)',
    doc: "with `DSH_IDLE_POLL`: how long idle CPUs go on polling after the last thing that happened (a request, an answer, a tool call, output sent to a client; on a node agent a relayed call or chunk), so a client's next call within it wakes nothing that halted",
  }),
  sandboxImage: text({
    env: 'DSH_SANDBOX_IMAGE',
    section: 'sandboxes',
    shown: 'built by setup',
    help: 'sandbox image tag (npm start passes the one it built)',
    doc: 'sandbox image tag; `npm start` passes the one it built, a direct `host/cli.ts serve` needs it set',
  }),
  dockerHost: text({
    env: 'DOCKER_HOST',
    section: 'sandboxes',
    shown: 'the local socket',
    help: 'Docker engine to use',
  }),
  poolSize: int({
    env: 'DSH_POOL_SIZE',
    section: 'sandboxes',
    default: 2,
    min: 0,
    max: 64,
    help: 'warm pool of started, unassigned sandboxes',
    doc: 'warm pool of started, unassigned sandboxes (a create of the default size and runtime takes one); while several tenants use the node, one of the last `DSH_POOL_SIZE` takers gets none that would leave fewer than a quarter ready for the others (a cold create instead)',
  }),
  sandboxLinks: toggle({
    env: 'DSH_SANDBOX_LINKS',
    section: 'sandboxes',
    default: true,
    help: "on: talk to each sandboxd over a unix socket of its container's own, not the engine's attach stream",
    doc: "`on`: the control plane talks to each sandboxd over a unix socket in a folder of that container's own (bind-mounted read-only at `/run/dsh-link`) instead of the engine's attach stream, so no dockerd or containerd-shim sits between them; the attach stream stays the bootstrap and the fallback. Off by itself with an engine on another host (`DOCKER_HOST` not `unix://`)",
  }),
  sandboxCgroup: text({
    env: 'DSH_SANDBOX_CGROUP',
    section: 'sandboxes',
    shown: 'none',
    help: 'a cgroup every sandbox runs under, with one memory limit for all of them together (unset: none)',
    doc: "a cgroup name (e.g. `dsh-sandboxes`) that the service makes on the engine's host with a memory limit for all its sandboxes together (`DSH_SANDBOX_CGROUP_MEMORY_MB`), and runs every sandbox under (runc; the engine's cgroupfs driver, cgroup v1 or v2; the service needs root there). However the sandboxes' own memory limits add up, past it the kernel reclaims and at worst ends the largest process inside it, never the control plane's, its isolate workers' or the engine's. A name that cannot be made or limited stops the start (`CONFIG_INVALID`). Unset: the engine's own cgroups, and the host's OOM killer picks among every process when the sandboxes' memory passes the host's (docs/security.md)",
  }),
  sandboxCgroupMemoryMb: int({
    env: 'DSH_SANDBOX_CGROUP_MEMORY_MB',
    section: 'sandboxes',
    default: 0,
    min: 0,
    max: 2 ** 30,
    help: "memory all sandboxes together may hold under DSH_SANDBOX_CGROUP, in MiB (0: the host's less a tenth, at least 1 GiB)",
  }),
  sandboxImageRoll: toggle({
    env: 'DSH_SANDBOX_IMAGE_ROLL',
    section: 'sandboxes',
    default: false,
    help: "on: an agent's stopped container made from another image is made again from DSH_SANDBOX_IMAGE, on its workspace, at its next use",
    doc: "`on`: after an image upgrade, an agent's container made from another image than `DSH_SANDBOX_IMAGE` is made again from it, on the same workspace (files kept), the next time the agent is used after its container stopped (the service's idle stop after 15 minutes, or a tenant's idle pause): every agent moves to the new image at its next idle moment, never under a running process. `off`: containers keep their image until they are gone (docs/operations.md, \"Sandbox image upgrades\")",
  }),
  linksDir: path({
    env: 'DSH_LINKS_DIR',
    section: 'sandboxes',
    shown: '`<data dir>/links`',
    default: (c) => resolve(c.dataDir as string, 'links'),
    help: "where the containers' link folders live",
    doc: "where the containers' link folders live (mode 0700; each container's 0755); a path too long for a unix socket turns links off, and the log says so",
  }),
  diskQuota: toggle({
    env: 'DSH_DISK_QUOTA',
    section: 'workspaces',
    default: true,
    help: 'on: each workspace is its own size-limited file system (root, a local engine); off: Docker volumes, no disk limit',
    doc: '`on`: every workspace is its own size-limited file system (needs root, loop devices and a local engine; the service refuses to start otherwise and says why). `off`: plain Docker volumes with **no disk limit**',
  }),
  workspacesDir: path({
    env: 'DSH_WORKSPACES_DIR',
    section: 'workspaces',
    shown: '`<data dir>/workspaces`',
    default: (c) => resolve(c.dataDir as string, 'workspaces'),
    help: 'workspace images and their mount points',
    doc: "workspace images and their mount points, and the snapshots' files (`.snapshots/`; on a node agent each instance's in `.snapshots/<instance>/`, docs/nodes.md). Inside the data directory (the default), snapshot files no record names (left by a crash) are removed at start; elsewhere (a folder other instances may share) they are left alone",
  }),
  workspaceMb: int({
    env: 'DSH_WORKSPACE_MB',
    section: 'workspaces',
    default: 1024,
    min: 16,
    max: 16 * 1024 * 1024,
    help: 'default workspace size in MiB',
    doc: 'default workspace size; an agent may ask for another with `sandbox.diskMb` (at most 64 GiB)',
  }),
  workspaceSpares: int({
    env: 'DSH_WORKSPACE_SPARES',
    section: 'workspaces',
    default: 2,
    min: 0,
    max: 64,
    help: 'workspaces of the default size made ahead',
    doc: 'workspaces of the default size made ahead (formatted file systems, not yet mounted), so that a cold create only mounts one; they count against the disk like any workspace and give way to a create that would not fit otherwise',
  }),
  diskOvercommit: ratio({
    env: 'DSH_DISK_OVERCOMMIT',
    section: 'workspaces',
    default: 1,
    help: "how far the workspaces' limits may exceed the free host disk (1: not at all)",
    doc: "how far the workspaces' limits may exceed the free host disk; at 1 a workspace is made only while every workspace can still grow to its limit (`CAPACITY_EXCEEDED` otherwise). A tenant that holds workspaces on the node while another tenant is about gets a further one (or a snapshot) only while a quarter of what could be admitted stays open for tenants that hold none, and a tenant's first larger than the default takes at most that quarter; one tenant alone may take it all",
  }),
  diskReserveMb: int({
    env: 'DSH_DISK_RESERVE_MB',
    section: 'workspaces',
    default: 1024,
    min: 0,
    max: 2 ** 30,
    help: 'host disk kept free beyond what the workspaces may still take, in MiB',
  }),
  spoolDir: path({
    env: 'DSH_SPOOL_DIR',
    section: 'workspaces',
    shown: '`<data dir>/spool`',
    default: (c) => resolve(c.dataDir as string, 'spool'),
    help: 'where archive uploads wait while they are checked (a disk, not a tmpfs)',
    doc: 'where archive uploads wait (private 0600 files) while they are checked in full',
  }),
  maxUploadBytes: int({
    env: 'DSH_MAX_UPLOAD_BYTES',
    section: 'workspaces',
    default: 64 * MiB,
    min: 1024,
    max: 2 ** 40,
    help: 'largest file or archive upload',
  }),
  tenantArchiveUploads: int({
    env: 'DSH_TENANT_ARCHIVE_UPLOADS',
    section: 'workspaces',
    default: 2,
    min: 1,
    max: 1000,
    help: 'archive uploads of one tenant spooled at once; more answer 429',
    doc: 'archive uploads (PUT /v1/agents/:id/archive) of one tenant waiting in the spool at once; one more answers 429 RATE_LIMITED before its body is read',
  }),
  archiveUploads: int({
    env: 'DSH_ARCHIVE_UPLOADS',
    section: 'workspaces',
    default: 16,
    min: 1,
    max: 100_000,
    help: 'archive uploads spooled at once in all; more answer 429',
    doc: 'archive uploads of all tenants waiting in the spool at once (each up to its tar bound on the data disk); one more answers 429 RATE_LIMITED. A tenant takes a second or later one only while a quarter of them stay free for tenants that have none',
  }),
  isolateWorkers: int({
    env: 'DSH_ISOLATE_WORKERS',
    section: 'code mode',
    default: 2,
    min: 1,
    max: 64,
    help: 'isolate worker processes for run_code',
  }),
  isolateWorkerMb: int({
    env: 'DSH_ISOLATE_WORKER_MB',
    section: 'code mode',
    default: 1024,
    min: 256,
    max: 65_536,
    help: 'resident memory of one isolate worker; bounds how many programs it holds',
    doc: 'resident memory of one isolate worker; a worker takes only the programs whose memory limits fit in it (9 of 64 MB each at 1024), the rest queue',
  }),
  isolateNice: int({
    env: 'DSH_ISOLATE_NICE',
    section: 'code mode',
    default: 10,
    min: 0,
    max: 19,
    help: "niceness of the isolate worker processes (0: the service's)",
    doc: "niceness of the isolate worker processes, so the control plane's thread goes first when strangers' programs compete with it for a core (a program's CPU limit is CPU time, unchanged); `0` leaves them at the service's",
  }),
  codeCpuMaxMs: int({
    env: 'DSH_CODE_CPU_MAX_MS',
    section: 'code mode',
    default: 60_000,
    min: 10,
    max: 3_600_000,
    help: 'the most CPU time an agent may ask for (codeMode.cpuMs)',
  }),
  codeWallMaxMs: int({
    env: 'DSH_CODE_WALL_MAX_MS',
    section: 'code mode',
    default: 3_600_000,
    min: 100,
    max: 86_400_000,
    help: 'the most wall-clock time an agent may ask for (codeMode.wallMs)',
  }),
  codeCpuMs: int({
    env: 'DSH_CODE_CPU_MS',
    section: 'code mode',
    default: (c) => Math.min(10_000, c.codeCpuMaxMs as number),
    shown: '`10000`',
    min: 10,
    max: (c) => c.codeCpuMaxMs as number,
    help: "a run_code program's CPU time for its own work, in ms (at most DSH_CODE_CPU_MAX_MS)",
  }),
  codeWallMs: int({
    env: 'DSH_CODE_WALL_MS',
    section: 'code mode',
    default: (c) => Math.min(600_000, c.codeWallMaxMs as number),
    shown: '`600000`',
    min: 100,
    max: (c) => c.codeWallMaxMs as number,
    help: "a run_code program's wall clock, waiting on tools included, in ms (at most DSH_CODE_WALL_MAX_MS)",
  }),
  pluginWorkers: int({
    env: 'DSH_PLUGIN_WORKERS',
    section: 'plugins',
    default: 8,
    min: 2,
    max: 1024,
    help: "creator-plugin worker processes on the host, every tenant's together",
    doc: "creator-plugin worker processes on the host, every tenant's together; each holds one tenant's plugins, and a quarter of them (at least one) stay for tenants that have none; when all are held, a tenant that has none takes the biggest holder's least recently used one among those idle and unused for DSH_PLUGIN_IDLE_MS (its plugins fail `ISOLATE_UNAVAILABLE` until run again)",
  }),
  pluginWorkerMb: int({
    env: 'DSH_PLUGIN_WORKER_MB',
    section: 'plugins',
    default: 1024,
    min: 256,
    max: 65_536,
    help: "resident memory of one plugin worker (its plugins' isolates included); killed past it",
  }),
  pluginIdleMs: int({
    env: 'DSH_PLUGIN_IDLE_MS',
    section: 'plugins',
    default: 30_000,
    min: 1000,
    max: 86_400_000,
    help: 'a plugin worker that holds no plugin ends after this; one unused this long may be taken for a tenant that has none (DSH_PLUGIN_WORKERS)',
  }),
  pluginTenantWorkers: int({
    env: 'DSH_PLUGIN_TENANT_WORKERS',
    section: 'plugins',
    default: 2,
    min: 1,
    max: 1024,
    help: 'plugin worker processes one tenant may have',
    doc: 'plugin worker processes one tenant may have (`LIMIT_EXCEEDED`, `data.limit: "maxWorkersPerTenant"`)',
  }),
  pluginsPerAgent: int({
    env: 'DSH_PLUGINS_PER_AGENT',
    section: 'plugins',
    default: 16,
    min: 1,
    max: 10_000,
    help: 'plugins one agent may run at once',
    doc: 'plugins one agent may run at once (`data.limit: "maxRunningPerAgent"`)',
  }),
  pluginsPerTenant: int({
    env: 'DSH_PLUGINS_PER_TENANT',
    section: 'plugins',
    default: 32,
    min: 1,
    max: 100_000,
    help: "plugins one tenant's agents may run at once",
    doc: 'plugins one tenant\'s agents may run at once (`data.limit: "maxRunningPerTenant"`); a tenant\'s `plugins` quota (`PUT /v1/tenants/:id/limits`) replaces it for that tenant',
  }),
  pluginAgentMb: int({
    env: 'DSH_PLUGIN_AGENT_MB',
    section: 'plugins',
    default: 256,
    min: 8,
    max: 1_048_576,
    help: "heap limits of one agent's running plugins, added up, in MB",
    doc: 'heap limits of one agent\'s running plugins, added up, in MB (`data.limit: "maxMemoryMbPerAgent"`)',
  }),
  pluginTenantMb: int({
    env: 'DSH_PLUGIN_TENANT_MB',
    section: 'plugins',
    default: 512,
    min: 8,
    max: 1_048_576,
    help: "heap limits of one tenant's running plugins, added up, in MB",
    doc: 'heap limits of one tenant\'s running plugins, added up, in MB (`data.limit: "maxMemoryMbPerTenant"`)',
  }),
  callTimeoutMs: int({
    env: 'DSH_CALL_TIMEOUT_MS',
    section: 'requests and connections',
    default: 600_000,
    min: 1000,
    max: 86_400_000,
    help: 'deadline of one call batch',
  }),
  tenantConcurrency: int({
    env: 'DSH_TENANT_CONCURRENCY',
    section: 'requests and connections',
    default: 16,
    min: 1,
    max: 10_000,
    help: 'requests of one tenant in flight; more answer 429',
    doc: 'requests of one tenant in flight; more answer 429 (deleting an agent takes no slot)',
  }),
  fairTurnMs: int({
    env: 'DSH_FAIR_TURN_MS',
    section: 'requests and connections',
    default: 4,
    min: 0,
    max: 1000,
    help: 'main-thread time call batches may take in one event-loop turn before they wait their turn (0: off)',
    doc: 'main-thread time call batches may take in one event-loop turn before they wait their turn (per tenant, round robin) behind light requests such as reads; `0` turns that off',
  }),
  maxConnections: int({
    env: 'DSH_MAX_CONNECTIONS',
    section: 'requests and connections',
    default: 1024,
    min: 16,
    max: 1_000_000,
    help: 'open HTTP connections at once',
  }),
  connectionReserve: {
    ...int({
      env: 'DSH_CONNECTION_RESERVE',
      section: 'requests and connections',
      default: (c) => Math.min(64, Math.floor((c.maxConnections as number) / 4)),
      shown: '`64` (at most a quarter of the cap)',
      min: 0,
      max: 1_000_000,
      help: 'connections only clients with a valid key may use',
      doc: 'connections only clients with a valid key may use: connections without one hold at most the cap minus this, the oldest closed to make room for a newer one',
    }),
    adopt(reserve: number, { earlier }: SettingContext): number {
      if (reserve >= (earlier.maxConnections as number))
        throw invalid(
          `DSH_CONNECTION_RESERVE (${reserve}) must be below DSH_MAX_CONNECTIONS (${String(earlier.maxConnections)})`,
        );
      return reserve;
    },
  } satisfies Setting<number>,
  tenantConnections: int({
    env: 'DSH_TENANT_CONNECTIONS',
    section: 'requests and connections',
    default: 128,
    min: 1,
    max: 1_000_000,
    help: 'open connections of one tenant; a request past that answers 429',
    doc: 'open connections of one tenant; a request past that answers 429 and its connection closes',
  }),
  tenantTerminals: int({
    env: 'DSH_TENANT_TERMINALS',
    section: 'requests and connections',
    default: 32,
    min: 1,
    max: 10_000,
    help: 'terminal WebSockets of one tenant open at once',
  }),
  firstByteTimeoutMs: timeoutMs({
    env: 'DSH_FIRST_BYTE_TIMEOUT_MS',
    section: 'requests and connections',
    default: 5000,
    help: 'a new connection that sends nothing by then is closed',
  }),
  headersTimeoutMs: timeoutMs({
    env: 'DSH_HEADERS_TIMEOUT_MS',
    section: 'requests and connections',
    default: 10_000,
    help: 'time to send a complete request head (then 408 and closed)',
    doc: "time to send a complete request head (then 408 and closed), to the API and to a sandbox's egress proxy (there counted from the connection's arrival, each connection on its own)",
  }),
  keepAliveTimeoutMs: timeoutMs({
    env: 'DSH_KEEP_ALIVE_TIMEOUT_MS',
    section: 'requests and connections',
    default: 5000,
    help: 'an idle keep-alive connection is closed after this',
  }),
  authFailures: int({
    env: 'DSH_AUTH_FAILURES',
    section: 'requests and connections',
    default: 10,
    min: 1,
    max: 1_000_000,
    help: 'failed key attempts one client address may make per window; then 429 AUTH_THROTTLED',
    doc: 'failed key attempts (tenant, admin or metrics key; API, terminal sockets or console sign-in) one client address may make per window; its further attempts answer 429 `AUTH_THROTTLED` with `Retry-After` until the window ends, without their key being checked',
  }),
  authFailureWindowMs: int({
    env: 'DSH_AUTH_FAILURE_WINDOW_MS',
    section: 'requests and connections',
    default: 60_000,
    min: 1000,
    max: 86_400_000,
    help: "that window, from the address's first failure in it",
  }),
  trustedProxies: proxies({
    env: 'DSH_TRUSTED_PROXIES',
    section: 'requests and connections',
    help: 'reverse proxies (ip or ip/prefix, comma-separated) whose X-Forwarded-For names the client',
    doc: "reverse proxies (IP addresses or `ip/prefix` subnets, comma-separated) whose `X-Forwarded-For` names the client for the key-failure throttle; unset, the header is ignored and the client is the TCP peer. **Set it behind a proxy**, else every client shares the proxy's address and one client's wrong keys throttle all of them",
  }),
  mcpOrigins: origins({
    env: 'DSH_MCP_ORIGINS',
    section: 'requests and connections',
    help: "browser origins admitted to the agents' MCP endpoints besides this machine's own",
    doc: "browser origins (comma-separated, `https://host[:port]`) admitted to the agents' MCP endpoints besides this machine's own (localhost, 127.0.0.0/8, ::1); a request carrying any other `Origin` answers 403 (DNS-rebinding protection); clients that are not browsers send no Origin and are not affected",
  }),
  eventPageBytes: int({
    env: 'DSH_EVENT_PAGE_BYTES',
    section: 'requests and connections',
    default: MiB,
    min: 64 * 1024,
    max: 256 * MiB,
    help: 'largest page of GET /v1/agents/:id/events',
    doc: 'largest page of `GET /v1/agents/:id/events` (and SSE replay step); large values come as references',
  }),
  tenantLogBytes: int({
    env: 'DSH_TENANT_LOG_BYTES',
    section: 'tenants and agents',
    default: 512 * MiB,
    min: MiB,
    max: 2 ** 50,
    help: 'durable log each tenant may hold',
    doc: "durable log each tenant may hold (events plus large values, each stored once); a call whose event does not fit answers `STORE_BUDGET_EXCEEDED` and is not run; results of calls already running are still logged, past it with large values as hash and size only; a tenant's `logBytes` quota (`PUT /v1/tenants/:id/limits`) replaces it for that tenant",
  }),
  schedulesPerAgent: int({
    env: 'DSH_SCHEDULES_PER_AGENT',
    section: 'tenants and agents',
    default: 32,
    min: 1,
    max: 10_000,
    help: 'schedules (schedule_create) one agent may have',
  }),
  tenantSchedules: int({
    env: 'DSH_TENANT_SCHEDULES',
    section: 'tenants and agents',
    default: 1024,
    min: 1,
    max: 10_000_000,
    help: "schedules all of one tenant's agents may have together",
    doc: "schedules all of one tenant's agents may have together (`LIMIT_EXCEEDED`, `data.limit: \"schedulesPerTenant\"`): every fire takes the API's thread, so a tenant with many agents could otherwise delay every other tenant's schedules",
  }),
  scheduleMinSeconds: int({
    env: 'DSH_SCHEDULE_MIN_SECONDS',
    section: 'tenants and agents',
    default: 60,
    min: 1,
    max: 86_400,
    help: 'shortest period of a recurring schedule (every_seconds)',
  }),
  skillsPerTenant: int({
    env: 'DSH_SKILLS_PER_TENANT',
    section: 'tenants and agents',
    default: 256,
    min: 1,
    max: 100_000,
    help: "skills one tenant's catalog may hold",
  }),
  skillMaxBytes: int({
    env: 'DSH_SKILL_MAX_BYTES',
    section: 'tenants and agents',
    default: 4 * MiB,
    min: 1024,
    max: 256 * MiB,
    help: 'bytes of all files of one skill package (at most 256 files)',
  }),
  childrenPerAgent: int({
    env: 'DSH_CHILDREN_PER_AGENT',
    section: 'teams',
    default: 16,
    min: 1,
    max: 10_000,
    help: 'live children and teammates one agent may have made',
    doc: 'live children and teammates one agent may have made (`CHILD_LIMIT_EXCEEDED`, `data.limit: "children"`)',
  }),
  childDepth: int({
    env: 'DSH_CHILD_DEPTH',
    section: 'teams',
    default: 3,
    min: 1,
    max: 16,
    help: 'how deep children may nest (a top-level agent is depth 0)',
    doc: 'how deep children may nest: a top-level agent is depth 0 (`data.limit: "depth"`)',
  }),
  concurrentChildren: int({
    env: 'DSH_CONCURRENT_CHILDREN',
    section: 'teams',
    default: 8,
    min: 1,
    max: 10_000,
    help: 'children of one agent running at once',
    doc: 'children of one agent running at once (`data.limit: "concurrent"`)',
  }),
  mailboxSize: int({
    env: 'DSH_MAILBOX_SIZE',
    section: 'teams',
    default: 256,
    min: 1,
    max: 1_000_000,
    help: "unread messages one agent's mailbox may hold",
    doc: "unread messages one agent's mailbox may hold (`MAILBOX_FULL`)",
  }),
  messageBytes: int({
    env: 'DSH_MESSAGE_BYTES',
    section: 'teams',
    default: 64 * 1024,
    min: 256,
    max: 16 * MiB,
    help: 'bytes of one message, report or child prompt',
    doc: 'bytes of one message, report or child prompt (`PAYLOAD_TOO_LARGE`)',
  }),
  subagentProviders: names({
    env: 'DSH_SUBAGENT_PROVIDERS',
    section: 'teams',
    help: 'product-provider bundles the clients run children with, each with a subagent_<name> alias (codex,claude_code)',
    doc: 'comma-separated product-provider bundles the clients run children with (`codex,claude_code`): each gets a `subagent_<name>` alias',
  }),
  teamBoardTasks: int({
    env: 'DSH_TEAM_BOARD_TASKS',
    section: 'teams',
    default: 500,
    min: 1,
    max: 100_000,
    help: "tasks one team's task board holds, completed ones included",
    doc: "tasks one team's task board holds, completed ones included (`LIMIT_EXCEEDED` past it)",
  }),
  teamTaskChars: int({
    env: 'DSH_TEAM_TASK_CHARS',
    section: 'teams',
    default: 8000,
    min: 100,
    max: 1_000_000,
    help: "characters of one team task's description",
    doc: "characters of one team task's description (subjects: 200)",
  }),
  teamTaskScopes: int({
    env: 'DSH_TEAM_TASK_SCOPES',
    section: 'teams',
    default: 32,
    min: 1,
    max: 1000,
    help: 'write scopes of one team task',
  }),
  egressConnections: int({
    env: 'DSH_EGRESS_TENANT_CONNECTIONS',
    section: 'egress',
    default: 32,
    min: 1,
    max: 100_000,
    help: 'egress connections (and HTTP requests) one tenant may have open at once',
    doc: "egress connections (and HTTP requests) one tenant may have open at once; the most a tenant's own `budget` may ask for",
  }),
  egressBytesPerHour: int({
    env: 'DSH_EGRESS_TENANT_BYTES_PER_HOUR',
    section: 'egress',
    default: 2 ** 30,
    min: 1024,
    max: 2 ** 50,
    help: 'egress bytes (both directions) one tenant may move per hour',
    doc: "egress bytes (both directions) one tenant may move per hour; the most a tenant's own `budget` may ask for",
  }),
  egressSandboxTunnels: int({
    env: 'DSH_EGRESS_SANDBOX_TUNNELS',
    section: 'egress',
    default: 16,
    min: 1,
    max: 1024,
    help: "connections through sandboxd's egress proxy one agent's sandbox may have open at once",
    doc: "connections through sandboxd's egress proxy one agent's sandbox may have open at once; more wait in sandboxd (at most 10 s, then a 503)",
  }),
  egressCaFile: path({
    env: 'DSH_EGRESS_CA_FILE',
    section: 'egress',
    shown: 'none',
    help: "a PEM file of CA certificates the gateway trusts for HTTPS upstreams besides Node's own",
    doc: "a PEM file of CA certificates the gateway trusts for HTTPS upstreams besides Node's own (a private CA; the loopback test servers' CA); read at start",
  }),
  egressTestHosts: testHosts({
    env: 'DSH_EGRESS_ALLOW_HOSTS_FOR_TESTS',
    section: 'egress',
    help: 'TEST AND DEVELOPMENT ONLY: non-public IP addresses the egress gateway may connect to',
    doc: "**test and development only**: IP addresses (`ip`, `ip:port`, `[ipv6]:port`, comma-separated) the egress gateway may connect to although they are not public (loopback servers standing in for the internet); the tenant's allowlist still decides. Off by default; the service prints the list at start when set",
  }),
  searxngUrl: url({
    env: 'DSH_SEARCH_SEARXNG_URL',
    section: 'egress',
    help: "a SearXNG instance every tenant's web_search uses unless the tenant set its own",
    doc: "a SearXNG instance (its base URL; the instance must enable the `json` format) that every tenant's `web_search` uses unless the tenant set its own; reached directly, as the operator's own service",
  }),
  webFetchMaxBytes: int({
    env: 'DSH_WEB_FETCH_MAX_BYTES',
    section: 'egress',
    default: 5 * MiB,
    min: 1024,
    max: 256 * MiB,
    help: 'largest response web_fetch reads',
  }),
  webFetchTimeoutMs: int({
    env: 'DSH_WEB_FETCH_TIMEOUT_MS',
    section: 'egress',
    default: 30_000,
    min: 1000,
    max: 600_000,
    help: 'deadline of one web_fetch, redirects included',
  }),
  nodes: nodeList({
    env: 'DSH_NODES',
    section: 'sandboxes',
    help: 'remote node agents to run sandboxes on (`name=https://host:port`), instead of the local engine',
    doc: 'remote node agents (`dsh-node`, docs/nodes.md) to run sandboxes on instead of the local engine: `name=https://host:port`, comma-separated; with several, each new agent is placed on the freest of up to 3 sampled nodes (an isolated child beside its parent). Needs `DSH_NODE_CERT`, `DSH_NODE_KEY` and `DSH_NODE_CA`',
  }),
  nodeListen: text({
    env: 'DSH_NODE_LISTEN',
    section: 'sandboxes',
    shown: '127.0.0.1:7443',
    default: '127.0.0.1:7443',
    help: 'where a node agent (`host/cli.ts node`) serves control planes (`host:port`)',
  }),
  nodeCert: path({
    env: 'DSH_NODE_CERT',
    section: 'sandboxes',
    shown: 'none',
    help: "this process's certificate (PEM) on the node protocol: the node agent's, or the control plane's",
    doc: 'this process\'s certificate (PEM file) on the node protocol (docs/nodes.md): the node agent\'s server certificate, or the control plane\'s client certificate; signed by `DSH_NODE_CA`, with its role (`urn:dsh:node:<name>` or `urn:dsh:control-plane`, as `scripts/node-certs.ts` makes them; docs/nodes.md, "Roles"); a control plane\'s also names its instance (`urn:dsh-instance:<id>`, what `dsh-sandbox nodes instance` prints; docs/nodes.md, "Instances"), else it does not start',
  }),
  nodeKey: path({
    env: 'DSH_NODE_KEY',
    section: 'sandboxes',
    shown: 'none',
    help: 'the private key (PEM) of DSH_NODE_CERT',
  }),
  nodeCa: path({
    env: 'DSH_NODE_CA',
    section: 'sandboxes',
    shown: 'none',
    help: "the cluster's CA certificate (PEM): each side of the node protocol accepts only certificates it signed",
  }),
  gvisorTenants: tenantList({
    env: 'DSH_GVISOR_TENANTS',
    section: 'sandboxes',
    help: 'tenants whose agents may ask for sandbox.runtime "gvisor": * (every tenant) or tenant ids, comma-separated',
    doc: 'tenants whose agents may ask for `sandbox: { runtime: "gvisor" }`: `*` (every tenant) or tenant ids, comma-separated. Unset: none (`RUNTIME_NOT_ALLOWED`); the engine must offer the runtime as well (`RUNTIME_UNAVAILABLE`). Every agent runs under runc unless it asks',
  }),
  gvisorRuntime: text({
    env: 'DSH_GVISOR_RUNTIME',
    section: 'sandboxes',
    shown: '`runsc`',
    default: 'runsc',
    help: "the Docker engine's name of the gVisor runtime (its daemon.json `runtimes` key)",
    doc: "the Docker engine's name of the gVisor runtime (the key under `runtimes` in its daemon.json, as `docker info` lists it); the engine offers `gvisor` when it lists this name",
  }),
  nodesCordoned: nameList({
    env: 'DSH_NODES_CORDONED',
    section: 'sandboxes',
    help: 'nodes of DSH_NODES that take no new agents (their agents keep working), comma-separated',
    doc: 'names of `DSH_NODES` nodes that get no new agents (cordoned, e.g. before draining one); agents already on them keep working there. A name not in `DSH_NODES` is refused at start. Cordons at run time, kept in the store: `POST /v1/nodes/:name/cordon` or `dsh-sandbox nodes cordon <name>` (docs/nodes.md)',
  }),
  checkpointMaxBytes: int({
    env: 'DSH_CHECKPOINT_MAX_BYTES',
    section: 'tenants and agents',
    default: 256 * 1024 * 1024,
    min: 0,
    max: 1024 * 1024 * 1024,
    help: "most bytes of checkpoint pre-images one agent keeps, whatever its tenant's settings ask",
    doc: "operator's maximum of the bytes of pre-images each agent's checkpoints keep on the control plane's disk (`<DSH_DATA_DIR>/checkpoints`), over every tenant's own `checkpoints.maxBytes` (`PUT /v1/settings`, up to 1 GiB). The control plane's disk holds every tenant's checkpoints beside the store: its worst case is this times the agents, and per tenant `DSH_TENANT_CHECKPOINT_MAX_BYTES` (or its `checkpointBytes` quota) over all its agents together. Default 268435456 (256 MiB); 0 turns tracking off for everyone",
  }),
  tenantCheckpointMaxBytes: int({
    env: 'DSH_TENANT_CHECKPOINT_MAX_BYTES',
    section: 'tenants and agents',
    default: 1024 * 1024 * 1024,
    min: 0,
    max: 2 ** 50,
    help: "most bytes of checkpoint pre-images all of one tenant's agents keep together",
    doc: "bytes of checkpoint pre-images (and bash snapshot checkpoints, as each agent's bound counts them) all of one tenant's agents keep together on this control plane's disk; past it the tenant's oldest checkpoints are dropped first, whichever agent holds them (a rollback to one answers `CHECKPOINT_DROPPED`), and no call fails for it. A tenant's `checkpointBytes` quota (`PUT /v1/tenants/:id/limits`) replaces it for that tenant. With replicas each control plane bounds what its own disk holds. Default 1073741824 (1 GiB); 0 keeps no checkpoints for tenants without a quota",
  }),
  logRetentionMaxDays: int({
    env: 'DSH_LOG_RETENTION_MAX_DAYS',
    section: 'tenants and agents',
    default: 0,
    min: 0,
    max: 36_500,
    help: 'longest a durable log event is kept, whatever the tenant asks (0: no maximum)',
    doc: "operator's maximum age of durable log events in days, over every tenant's own `log.retentionDays` (`PUT /v1/settings`); older events go in the background retention pass (docs/operations.md). 0 (default): no maximum, each tenant's setting alone applies",
  }),
  logRetentionEverySeconds: int({
    env: 'DSH_LOG_RETENTION_EVERY_SECONDS',
    section: 'tenants and agents',
    default: 3600,
    min: 10,
    max: 86_400,
    help: 'how often the log retention pass runs',
    doc: "how often the background log retention pass runs (seconds; also once a minute after start): each pass removes what every tenant's retention lets go, in bounded slices, and gives the space back",
  }),
  freezeMaxSeconds: int({
    env: 'DSH_FREEZE_MAX_SECONDS',
    section: 'tenants and agents',
    default: 4 * 3600,
    min: 0,
    max: 30 * 86_400,
    help: 'longest an agent stays frozen (a freeze pause) before it is stopped instead (0: no bound)',
    doc: 'longest an agent stays paused with `mode: "freeze"` (its processes and their memory kept on its node) before it is stopped instead (seconds): its pause becomes a `stop` one since the same moment, its processes, background jobs, terminals and `/tmp` lost, its workspace kept (docs/api.md, "Pause and resume"). Checked every quarter of it (at most every minute). 0: no bound, a freeze holds its memory until resumed or deleted',
  }),
} as const;

/** The service's configuration: one value per setting of the table. */
export type Config = { -readonly [K in keyof typeof SETTINGS]: ReturnType<(typeof SETTINGS)[K]['fallback']> };
