// Which runtimes (../runtimes.ts) this provider's engine offers, read from `docker info`'s
// Runtimes, and the engine's name of each (`gvisor` is the runtime registered as `runsc` unless
// the operator registered it under another name). The engine's default runtime serves `runc`.
// Invariants: `runc` is always offered; a read that failed is tried again at the next ask (an
// engine restarted with runsc registered is seen without restarting the service); a container's
// runtime is read back from its HostConfig.Runtime, so a container made before a restart is
// remade under the same runtime. Under gVisor the pids cgroup also counts gVisor's own kernel
// (sentry, gofer: about 60 host threads for an idle sandboxd, against 13 under runc) and, on the
// ptrace platform, a host thread per application thread: the container's PidsLimit is the
// agent's `pids` plus GVISOR_PIDS_HEADROOM, and reads back without it; likewise the memory
// cgroup carries the sentry's own memory (GVISOR_MEMORY_HEADROOM on top of the agent's).
import type Docker from 'dockerode';
import { DEFAULT_RUNTIME, runtimeUnavailable, SANDBOX_RUNTIMES, type SandboxRuntime } from '../runtimes.ts';
import type { SandboxLimits } from '../types.ts';
import { fromDocker } from './errors.ts';

/** The engine's runtime name for each runtime but the default. Default { gvisor: 'runsc' }. */
export type EngineRuntimes = Partial<Record<Exclude<SandboxRuntime, 'runc'>, string>>;

export const DEFAULT_ENGINE_RUNTIMES: EngineRuntimes = { gvisor: 'runsc' };

export interface RuntimeCatalog {
  /** The runtimes the engine offers now. */
  offered(): Promise<readonly SandboxRuntime[]>;
  /** HostConfig.Runtime for a container under `runtime`; undefined: the engine's default. */
  engineName(runtime: SandboxRuntime): string | undefined;
  /** The runtime a container's inspect shows it runs under (an unknown name reads as the default). */
  of(info: Docker.ContainerInspectInfo): SandboxRuntime;
  /** Refuses (RUNTIME_UNAVAILABLE) a runtime the engine does not offer. */
  require(runtime: SandboxRuntime): Promise<void>;
}

export function runtimeCatalog(
  docker: Docker,
  names: EngineRuntimes = DEFAULT_ENGINE_RUNTIMES,
): RuntimeCatalog {
  let reading: Promise<readonly SandboxRuntime[]> | undefined;

  async function read(): Promise<readonly SandboxRuntime[]> {
    let info: { Runtimes?: Record<string, unknown> };
    try {
      info = (await docker.info()) as typeof info;
    } catch (e) {
      throw fromDocker(e, 'Reading the runtimes the Docker engine offers');
    }
    const registered = new Set(Object.keys(info.Runtimes ?? {}));
    return SANDBOX_RUNTIMES.filter((r) => {
      const name = engineName(r);
      return name === undefined || registered.has(name);
    });
  }

  function offered(): Promise<readonly SandboxRuntime[]> {
    if (reading === undefined) {
      const attempt = read();
      reading = attempt;
      attempt.catch(() => {
        if (reading === attempt) reading = undefined;
      });
    }
    return reading;
  }

  function engineName(runtime: SandboxRuntime): string | undefined {
    return runtime === DEFAULT_RUNTIME ? undefined : names[runtime as keyof EngineRuntimes];
  }

  return {
    offered,
    engineName,
    of(info) {
      const name = (info.HostConfig as { Runtime?: string } | undefined)?.Runtime;
      const found = SANDBOX_RUNTIMES.find((r) => r !== DEFAULT_RUNTIME && engineName(r) === name);
      return found ?? DEFAULT_RUNTIME;
    },
    async require(runtime) {
      if (runtime === DEFAULT_RUNTIME || (await offered()).includes(runtime)) return;
      throw runtimeUnavailable(runtime, await offered());
    },
  };
}

/**
 * Host threads of gVisor's own kernel (sentry and gofer) a gVisor container's pids cgroup carries.
 * At 128, ordinary probes of an agent with `pids` 64 ran the cgroup out, and a gVisor kernel that
 * cannot make a thread dies with the whole sandbox (tests/integration/security, `[gvisor]`).
 */
export const GVISOR_PIDS_HEADROOM = 256;

/** Memory of gVisor's own kernel a gVisor container's memory cgroup carries (an idle sandboxd's sentry: tens of MiB). */
export const GVISOR_MEMORY_HEADROOM = 128 * 1024 * 1024;

/** The limits a container under `runtime` is given for an agent's `limits`. */
export const engineLimits = (runtime: SandboxRuntime | undefined, limits: SandboxLimits): SandboxLimits =>
  runtime === 'gvisor'
    ? {
        ...limits,
        pids: limits.pids + GVISOR_PIDS_HEADROOM,
        memoryBytes: limits.memoryBytes + GVISOR_MEMORY_HEADROOM,
      }
    : limits;

/** The agent's limits of a container under `runtime` whose engine limits are `limits`. */
export const agentLimits = <T extends Partial<SandboxLimits>>(runtime: SandboxRuntime, limits: T): T => {
  if (runtime !== 'gvisor') return limits;
  const out = { ...limits };
  if (out.pids !== undefined) out.pids = Math.max(1, out.pids - GVISOR_PIDS_HEADROOM);
  if (out.memoryBytes !== undefined) out.memoryBytes = Math.max(1, out.memoryBytes - GVISOR_MEMORY_HEADROOM);
  return out;
};
