// The hardened container definition of an agent sandbox, and per-agent limits within tenant maxima.
// Invariants (asserted from `docker inspect` by tests/integration/sandbox/cis.test.ts, CIS Docker
// Benchmark 5.x): no network, all capabilities dropped but SETUID and SETGID, no-new-privileges, our
// own seccomp profile (seccomp.ts), read-only root with only the workspace, a size-limited /tmp and
// a /dev/shm of the same size writable, memory (swap equal) / CPU / pids limits, init process, log
// driver none, no privileged mode, no host namespaces, no devices, no bind mount but the workspace's
// own file system and the container's own link folder (read-only: LINK_MOUNT), so never the Docker
// socket, restart policy "no".
// Identity (CIS 4.1 differs on purpose): the container starts as root so that sandboxd can run
// apart from the agent (real uid 0, effective uid AGENT_IDS; sandbox-image/sandboxd/identity.ts)
// with the two capabilities it needs for that; every process of the agent runs as uid 1000 only,
// with no capability, and cannot signal, trace or read sandboxd, nor read the environment of its
// programs on pipes (uid 1000, gid SERVER_GID).

import type Docker from 'dockerode';
import { SandboxError } from '../../errors.ts';
import { WORKSPACE_ROOT } from '../paths.ts';
import type { SandboxLimits } from '../types.ts';
import { SECCOMP_PROFILE } from './seccomp.ts';

export const LABEL_MANAGED = 'dsh.managed';
export const LABEL_TENANT = 'dsh.tenant';
export const LABEL_AGENT = 'dsh.agent';
export const LABEL_POOL = 'dsh.pool';
/**
 * Which control-plane instance (its store's instance id) made a container or workspace volume. An
 * instance adopts, reaps and removes only what carries its own id; several may share one engine.
 */
export const LABEL_INSTANCE = 'dsh.instance';
/**
 * Which process of the instance made a pool container: a pool container of the same instance but
 * another process is a leftover of a previous run and is removed on adopt().
 */
export const LABEL_POOL_OWNER = 'dsh.pool.owner';

/** uid:gid of every process the agent runs in its sandbox (the image's `agent` user). */
export const AGENT_IDS = '1000:1000';
/**
 * The gid of the sandbox's programs on pipes (stdio MCP servers, language servers), with the
 * agent's uid: not the agent's group, so that the agent's processes cannot read their environment.
 */
export const SERVER_GID = '1001';

export const DOCKER_DEFAULT_LIMITS: SandboxLimits = {
  memoryBytes: 512 * 1024 * 1024,
  nanoCpus: 1_000_000_000,
  pids: 256,
  maxReadBytes: 10 * 1024 * 1024,
  maxOutputBytes: 1024 * 1024,
  diskBytes: 1024 * 1024 * 1024,
};

export const DOCKER_DEFAULT_MAXIMA: SandboxLimits = {
  memoryBytes: 4 * 1024 * 1024 * 1024,
  nanoCpus: 2_000_000_000,
  pids: 1024,
  maxReadBytes: 64 * 1024 * 1024,
  maxOutputBytes: 16 * 1024 * 1024,
  diskBytes: 64 * 1024 * 1024 * 1024,
};

/** Requested limits over defaults; a request above a maximum (or not a positive integer) is refused. */
export const resolveLimits = (
  defaults: SandboxLimits,
  maxima: SandboxLimits,
  requested: Partial<SandboxLimits> = {},
): SandboxLimits => {
  const out = { ...defaults };
  for (const key of Object.keys(defaults) as Array<keyof SandboxLimits>) {
    const v = requested[key];
    if (v === undefined) continue;
    if (!Number.isSafeInteger(v) || v <= 0) {
      throw new SandboxError(
        'LIMIT_EXCEEDED',
        `Sandbox limit ${key} must be a positive integer, got ${JSON.stringify(v)}.`,
        { data: { key, value: v } },
      );
    }
    const maximum = maxima[key];
    if (maximum !== undefined && v > maximum) {
      throw new SandboxError(
        'LIMIT_EXCEEDED',
        `Sandbox limit ${key}=${v} exceeds the tenant maximum ${maximum}; ask for at most ${maximum}.`,
        { data: { key, value: v, maximum } },
      );
    }
    out[key] = v;
  }
  return out;
};

/** The resource part of HostConfig, also what `container.update()` takes when a pooled container is assigned. */
export const resourceConfig = (limits: SandboxLimits) => ({
  Memory: limits.memoryBytes,
  MemorySwap: limits.memoryBytes,
  NanoCpus: limits.nanoCpus,
  PidsLimit: limits.pids,
});

/** Where a container sees its link folder (read-only): the host's link socket appears there. */
export const LINK_MOUNT = '/run/dsh-link';
/** The link socket's name in that folder (host/sandbox/sandboxd/link.ts). */
export const LINK_SOCKET = 'link.sock';

/** The host folder bind-mounted at LINK_MOUNT, when the container has one. */
export const linkDirOf = (info: Docker.ContainerInspectInfo): string | undefined =>
  info.Mounts?.find((m) => m.Destination === LINK_MOUNT && m.Type === 'bind')?.Source;

export interface ContainerSpec {
  image: string;
  name: string;
  /** The /workspace mount (workspaces.ts): a loop-mounted file system or a named volume. */
  workspace: Docker.MountSettings;
  labels: Record<string, string>;
  limits: SandboxLimits;
  /** Size of the /tmp tmpfs in bytes; /dev/shm gets the same. */
  tmpBytes: number;
  /** Extra environment for sandboxd. */
  env?: Record<string, string>;
  /** A host folder of this container's own, for the link socket (read-only at LINK_MOUNT). */
  link?: string;
  /**
   * The engine's name of the runtime to run it under (runtimes.ts), e.g. `runsc`; absent: the
   * engine's default. The hardening above is the same under every runtime.
   */
  runtime?: string;
  /** The seccomp profile (seccomp.ts seccompFor). Default SECCOMP_PROFILE. */
  seccomp?: string;
  /** The cgroup every sandbox runs under (cgroup.ts), under the engine's default runtime; absent: the engine's default. */
  cgroupParent?: string;
}

export const containerConfig = (spec: ContainerSpec): Docker.ContainerCreateOptions => ({
  name: spec.name,
  Image: spec.image,
  Labels: spec.labels,
  User: '0:0',
  WorkingDir: WORKSPACE_ROOT,
  Env: Object.entries({
    ...spec.env,
    SANDBOXD_ROOT: WORKSPACE_ROOT,
    SANDBOXD_AGENT: AGENT_IDS,
    SANDBOXD_SERVER_GID: SERVER_GID,
    ...(spec.link === undefined ? {} : { SANDBOXD_LINK: `${LINK_MOUNT}/${LINK_SOCKET}` }),
  }).map(([k, v]) => `${k}=${v}`),
  // sandboxd speaks its framed RPC over the attach stream: stdin stays open across detaches.
  OpenStdin: true,
  StdinOnce: false,
  AttachStdin: true,
  AttachStdout: true,
  AttachStderr: true,
  Tty: false,
  NetworkDisabled: true,
  HostConfig: {
    NetworkMode: 'none',
    CapDrop: ['ALL'],
    // Held by sandboxd only, used once at its start (identity.ts); the agent's processes have none.
    CapAdd: ['SETUID', 'SETGID'],
    SecurityOpt: ['no-new-privileges:true', `seccomp=${spec.seccomp ?? SECCOMP_PROFILE}`],
    Privileged: false,
    ReadonlyRootfs: true,
    Mounts: [
      { ...spec.workspace, Target: WORKSPACE_ROOT, ReadOnly: false },
      ...(spec.link === undefined
        ? []
        : [{ Type: 'bind' as const, Source: spec.link, Target: LINK_MOUNT, ReadOnly: true }]),
    ],
    // bash runs scripts from /tmp, so no noexec; nosuid/nodev still apply.
    Tmpfs: { '/tmp': `rw,nosuid,nodev,size=${spec.tmpBytes},mode=1777` },
    // /dev/shm (nosuid, nodev, noexec by Docker) bounded like /tmp; POSIX message queues are closed
    // by the seccomp profile. Both are memory, counted in the container's memory limit.
    ShmSize: spec.tmpBytes,
    ...resourceConfig(spec.limits),
    Ulimits: [
      // No nproc: RLIMIT_NPROC counts every process of uid 1000 on the host, across all agents;
      // the per-container pids cgroup (PidsLimit) is the limit that is actually per agent.
      { Name: 'nofile', Soft: 4096, Hard: 8192 },
      { Name: 'core', Soft: 0, Hard: 0 },
    ],
    Init: true,
    LogConfig: { Type: 'none', Config: {} },
    RestartPolicy: { Name: 'no', MaximumRetryCount: 0 },
    IpcMode: 'private',
    PidMode: '',
    UTSMode: '',
    UsernsMode: '',
    Devices: [],
    AutoRemove: false,
    ...(spec.runtime === undefined ? {} : { Runtime: spec.runtime }),
    ...(spec.cgroupParent === undefined || spec.runtime !== undefined
      ? {}
      : { CgroupParent: spec.cgroupParent }),
  },
});
