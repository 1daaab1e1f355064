// The creator-plugin runtime: plugins by id, each stopped | starting | running | failed, each
// running one package in an isolate of its own on a worker process of its tenant (processes.ts).
// Operations on one plugin (start, update, stop, a restart after its worker died) run one after
// another, never interleaved. Update is Cordis HMR's: dispose the old package's effects, load the
// new one, and when that fails load the old one again; the package a plugin runs moves only on
// success. Invariants: a plugin's state is `running` exactly while its current instance is loaded;
// every instance that ends has undone its registrations (instance.ts) before the state changes; a
// plugin's failure, loop or memory ends only that plugin — when a worker process dies, its plugins
// (all of one tenant: no other tenant's plugin shares it) are started again from their packages
// (`restarts`). A tenant's agents still share its workers, so a death is blamed with care: not on
// anybody when a plugin on that worker had just ended by memory or CPU (isolated-vm may leave the
// process past its cap after disposing such an isolate), else on the plugins that were running
// something; a plugin ends as `crash` only when it was to blame for two deaths since it was last
// started, so one agent's bomb cannot fail its neighbour that merely had a call in flight.
import { isSandboxError, messageOf, SandboxError } from '../errors.ts';
import type { PluginOwner } from '../store/plugins-core.ts';
import { createInstance, type Instance } from './instance.ts';
import {
  createPluginProcesses,
  type PluginPlacement,
  type PluginProcesses,
  type PluginProcessesOptions,
} from './processes.ts';
import {
  DEFAULT_PLUGIN_LIMITS,
  type JsonValue,
  type PluginCapabilities,
  type PluginFailure,
  type PluginLimits,
  type PluginLogLine,
  type PluginState,
  type PluginStatus,
} from './types.ts';

export interface RunPackage {
  packageId: string;
  /** The package's host body. */
  source: string;
}

export interface StartInput extends RunPackage {
  owner: PluginOwner;
  pluginId: string;
  /** Everything the plugin may do outside its isolate. */
  capabilities: PluginCapabilities;
  /** Passed to apply(ctx, config). Default {}. */
  config?: JsonValue;
}

/** How a start or update went: the plugin's status after it, and the failure if it did not happen. */
export type RunResult =
  | { ok: true; status: PluginStatus }
  | { ok: false; error: PluginFailure; status: PluginStatus };

export interface PluginRuntimeOptions {
  /** The worker processes; default: created from `processOptions` and closed with the runtime. */
  processes?: PluginProcesses;
  processOptions?: PluginProcessesOptions;
  /** The service's limits for every tenant; fields it leaves out come from DEFAULT_PLUGIN_LIMITS. */
  limits?: Partial<PluginLimits>;
  /** A tenant's own limits; fields it leaves out come from `limits`. */
  limitsOf?: (tenantId: string) => Partial<PluginLimits> | undefined;
  /** Told after every state change (to persist what a restart should resume). */
  onStateChange?: (owner: PluginOwner, status: PluginStatus) => void;
  now?: () => number;
}

export interface PluginRuntime {
  /** Starts a stopped or failed plugin; CONFLICT when it is starting or running (use update). */
  start(input: StartInput): Promise<RunResult>;
  /** Replaces the running package (or starts this one when the plugin is not running). */
  update(owner: PluginOwner, pluginId: string, pkg: RunPackage): Promise<RunResult>;
  /** Disposes everything the plugin registered and its isolate; a no-op when it is not loaded. */
  stop(owner: PluginOwner, pluginId: string): Promise<PluginStatus>;
  /** Drops a stopped or failed plugin from the runtime (undefine); CONFLICT while it runs. */
  forget(owner: PluginOwner, pluginId: string): boolean;
  status(owner: PluginOwner, pluginId: string): PluginStatus | undefined;
  list(owner: PluginOwner): PluginStatus[];
  /** The pids of the worker processes, of one tenant or of all (diagnostics and tests). */
  pids(tenantId?: string): number[];
  close(): Promise<void>;
}

interface Plugin {
  owner: PluginOwner;
  pluginId: string;
  limits: PluginLimits;
  capabilities: PluginCapabilities;
  config: JsonValue;
  state: PluginState;
  /** The package loaded, or that ran last. */
  current?: RunPackage;
  name?: string;
  error?: PluginFailure;
  instance?: Instance;
  logs: PluginLogLine[];
  droppedLogs: number;
  restarts: number;
  /** Worker deaths this plugin was running something at, since it was last started or updated. */
  strikes: number;
  /** The chain operations on this plugin run on. */
  queue: Promise<unknown>;
}

/** How long after an isolate ended by memory or CPU its worker's death is put down to it. */
const EXCUSE_MS = 30_000;

export const createPluginRuntime = (options: PluginRuntimeOptions = {}): PluginRuntime => {
  const processes = options.processes ?? createPluginProcesses(options.processOptions);
  const now = options.now ?? Date.now;
  const plugins = new Map<string, Plugin>();
  /** Live instances by id, for routing worker messages. */
  const instances = new Map<number, { instance: Instance; worker: number }>();
  let nextInstance = 0;
  let closed = false;
  /** When an isolate on a worker (by id) last ended by memory or CPU: its death soon after is that isolate's. */
  const hostileEnds = new Map<number, number>();
  const noteEnd = (worker: number | undefined, kind: PluginFailure['kind']): void => {
    if (worker !== undefined && (kind === 'memory' || kind === 'timeout'))
      hostileEnds.set(worker, performance.now());
  };

  processes.listen({
    message(worker, message) {
      if (message.t === 'ready' || message.t === 'batch') return;
      const live = instances.get(message.id);
      if (live !== undefined && live.worker === worker.id) live.instance.handle(message);
    },
    exit(worker) {
      const excused =
        performance.now() - (hostileEnds.get(worker.id) ?? Number.NEGATIVE_INFINITY) < EXCUSE_MS;
      hostileEnds.delete(worker.id);
      for (const live of [...instances.values()]) if (live.worker === worker.id) live.instance.lost(excused);
    },
  });

  const statusOf = (plugin: Plugin): PluginStatus => {
    const status: PluginStatus = {
      pluginId: plugin.pluginId,
      state: plugin.state,
      tools: plugin.instance?.tools() ?? [],
      providers: plugin.instance?.providers() ?? [],
      logs: plugin.logs.map((line) => ({ ...line })),
      droppedLogs: plugin.droppedLogs,
      restarts: plugin.restarts,
    };
    if (plugin.current) status.packageId = plugin.current.packageId;
    if (plugin.name !== undefined) status.name = plugin.name;
    if (plugin.error) status.error = { ...plugin.error };
    return status;
  };
  const setState = (plugin: Plugin, state: PluginState): void => {
    if (plugin.state === state) return;
    plugin.state = state;
    if (plugins.get(plugin.pluginId) === plugin) options.onStateChange?.(plugin.owner, statusOf(plugin));
  };
  const log = (plugin: Plugin, line: Omit<PluginLogLine, 'at'>, dropped = 0): void => {
    plugin.droppedLogs += dropped;
    plugin.logs.push({ at: now(), ...line });
    if (plugin.logs.length > plugin.limits.logRing) {
      plugin.logs.splice(0, plugin.logs.length - plugin.limits.logRing);
      plugin.droppedLogs++;
    }
  };
  const failure = (f: Omit<PluginFailure, 'at'>): PluginFailure => ({ ...f, at: now() });

  /** Runs `fn` after every earlier operation on the plugin, whatever they did. */
  const serial = <T>(plugin: Plugin, fn: () => Promise<T>): Promise<T> => {
    const next = plugin.queue.then(fn, fn);
    plugin.queue = next.catch(() => undefined);
    return next;
  };

  const owned = (owner: PluginOwner, pluginId: string): Plugin | undefined => {
    const plugin = plugins.get(pluginId);
    return plugin && plugin.owner.tenantId === owner.tenantId && plugin.owner.agentId === owner.agentId
      ? plugin
      : undefined;
  };

  /** Loads `pkg` into a new instance; leaves the plugin running it, or returns why not (state untouched). */
  async function load(plugin: Plugin, pkg: RunPackage): Promise<PluginFailure | undefined> {
    if (closed) return failure({ kind: 'unavailable', message: 'the plugin runtime is shutting down' });
    if (pkg.source.length > plugin.limits.maxCodeBytes)
      return failure({
        kind: 'limit',
        message: `the host body is over ${plugin.limits.maxCodeBytes} characters`,
      });
    let placement: PluginPlacement;
    try {
      placement = await processes.place({
        owner: plugin.owner,
        memoryMb: plugin.limits.memoryMb,
        caps: plugin.limits,
      });
    } catch (error) {
      return refused(error);
    }
    const { worker } = placement;
    const id = ++nextInstance;
    const instance = createInstance({
      id,
      pluginId: plugin.pluginId,
      placement,
      processes,
      limits: plugin.limits,
      capabilities: plugin.capabilities,
      log: (line, dropped) => log(plugin, line, dropped),
      onEnd: (reason, suspect) => ended(plugin, instance, reason, suspect),
    });
    instances.set(id, { instance, worker: worker.id });
    plugin.instance = instance;
    setState(plugin, 'starting');
    try {
      plugin.name = await instance.load(pkg.source, plugin.config);
    } catch (reason) {
      instances.delete(id);
      plugin.instance = undefined;
      const failed = failure(reason as Omit<PluginFailure, 'at'>);
      noteEnd(worker.id, failed.kind);
      return failed;
    }
    plugin.current = pkg;
    plugin.error = undefined;
    setState(plugin, 'running');
    return undefined;
  }

  /** Why place() refused a plugin, with its stable code and, past a cap, the cap. */
  function refused(error: unknown): PluginFailure {
    if (!isSandboxError(error)) return failure({ kind: 'unavailable', message: messageOf(error) });
    const { limit, max } = error.data ?? {};
    const capped = error.code === 'LIMIT_EXCEEDED' && typeof limit === 'string' && typeof max === 'number';
    return failure({
      kind: capped ? 'limit' : 'unavailable',
      message: error.message,
      code: error.code,
      ...(capped ? { limit: { name: limit, max } } : {}),
    });
  }

  /** A loaded instance ended by itself: the plugin fails, or starts again if its worker died under another. */
  function ended(
    plugin: Plugin,
    instance: Instance,
    reason: Omit<PluginFailure, 'at'>,
    suspect: boolean,
  ): void {
    noteEnd(instances.get(instance.id)?.worker, reason.kind);
    instances.delete(instance.id);
    if (plugin.instance !== instance) return;
    plugin.instance = undefined;
    if (reason.kind === 'crash' && suspect) plugin.strikes++;
    if (reason.kind === 'crash' && plugin.strikes < 2 && plugin.current && !closed) {
      const pkg = plugin.current;
      plugin.restarts++;
      log(plugin, {
        level: 'warn',
        text: suspect
          ? 'runtime: the plugin process died while this plugin ran something; starting again (a second such death fails it)'
          : 'runtime: the plugin process died under another plugin; starting again',
      });
      setState(plugin, 'starting');
      void serial(plugin, async () => {
        if (plugin.state !== 'starting' || plugin.instance !== undefined) return;
        const error = await load(plugin, pkg);
        if (error) fail(plugin, error);
      });
      return;
    }
    fail(plugin, failure(reason));
  }

  function fail(plugin: Plugin, error: PluginFailure): void {
    plugin.error = error;
    log(plugin, { level: 'error', text: `runtime: the plugin failed (${error.kind}): ${error.message}` });
    setState(plugin, 'failed');
  }

  async function unload(plugin: Plugin): Promise<void> {
    const instance = plugin.instance;
    if (instance === undefined) return;
    plugin.instance = undefined;
    await instance.unload();
    instances.delete(instance.id);
  }

  const result = (plugin: Plugin, error?: PluginFailure): RunResult =>
    error ? { ok: false, error, status: statusOf(plugin) } : { ok: true, status: statusOf(plugin) };

  const notFound = (pluginId: string) =>
    new SandboxError('NOT_FOUND', `Plugin ${pluginId} is not loaded; run it first.`, { data: { pluginId } });

  return {
    start(input) {
      const limits = {
        ...DEFAULT_PLUGIN_LIMITS,
        ...options.limits,
        ...options.limitsOf?.(input.owner.tenantId),
      };
      let plugin = plugins.get(input.pluginId);
      if (plugin !== undefined && owned(input.owner, input.pluginId) === undefined)
        return Promise.reject(notFound(input.pluginId));
      if (plugin?.state === 'running' || plugin?.state === 'starting') {
        return Promise.reject(
          new SandboxError(
            'CONFLICT',
            `Plugin ${input.pluginId} is already ${plugin.state}; update it instead.`,
          ),
        );
      }
      if (plugin === undefined) {
        plugin = {
          owner: { tenantId: input.owner.tenantId, agentId: input.owner.agentId },
          pluginId: input.pluginId,
          limits,
          capabilities: input.capabilities,
          config: input.config ?? {},
          state: 'stopped',
          logs: [],
          droppedLogs: 0,
          restarts: 0,
          strikes: 0,
          queue: Promise.resolve(),
        };
        plugins.set(input.pluginId, plugin);
      } else {
        plugin.limits = limits;
        plugin.capabilities = input.capabilities;
        plugin.config = input.config ?? {};
      }
      const target = plugin;
      target.strikes = 0;
      setState(target, 'starting');
      return serial(target, async () => {
        const error = await load(target, { packageId: input.packageId, source: input.source });
        if (error) {
          target.current ??= { packageId: input.packageId, source: input.source };
          fail(target, error);
        }
        return result(target, error);
      });
    },

    update(owner, pluginId, pkg) {
      const plugin = owned(owner, pluginId);
      if (plugin === undefined) return Promise.reject(notFound(pluginId));
      return serial(plugin, async () => {
        plugin.strikes = 0;
        const old = plugin.state === 'running' ? plugin.current : undefined;
        if (old)
          log(plugin, { level: 'info', text: `runtime: updating from ${old.packageId} to ${pkg.packageId}` });
        await unload(plugin);
        const error = await load(plugin, pkg);
        if (error === undefined) return result(plugin);
        log(plugin, {
          level: 'error',
          text: `runtime: ${pkg.packageId} failed to start (${error.kind}): ${error.message}`,
        });
        if (old === undefined) {
          fail(plugin, error);
          return result(plugin, error);
        }
        // As Cordis HMR: the new package failed, so the old one comes back.
        const again = await load(plugin, old);
        if (again) fail(plugin, again);
        else plugin.error = error;
        return result(plugin, error);
      });
    },

    stop(owner, pluginId) {
      const plugin = owned(owner, pluginId);
      if (plugin === undefined) return Promise.reject(notFound(pluginId));
      return serial(plugin, async () => {
        await unload(plugin);
        if (plugin.state !== 'stopped') setState(plugin, 'stopped');
        return statusOf(plugin);
      });
    },

    forget(owner, pluginId) {
      const plugin = owned(owner, pluginId);
      if (plugin === undefined) return false;
      if (plugin.state === 'running' || plugin.state === 'starting')
        throw new SandboxError('CONFLICT', `Plugin ${pluginId} is ${plugin.state}; stop it first.`);
      plugins.delete(pluginId);
      return true;
    },

    status(owner, pluginId) {
      const plugin = owned(owner, pluginId);
      return plugin === undefined ? undefined : statusOf(plugin);
    },

    list: (owner) =>
      [...plugins.values()]
        .filter((p) => p.owner.tenantId === owner.tenantId && p.owner.agentId === owner.agentId)
        .map(statusOf),

    pids: (tenantId) => processes.pids(tenantId),

    async close() {
      if (closed) return;
      closed = true;
      await Promise.all([...plugins.values()].map((plugin) => serial(plugin, () => unload(plugin))));
      if (options.processes === undefined) await processes.close();
    },
  };
};
