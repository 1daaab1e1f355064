// The creator-plugin runtime's state: plugins by id, each stopped | starting | running | failed,
// the live instances by id (for routing worker messages) and when an isolate on a worker last ended
// by memory or CPU. The other parts (instances.ts, operations.ts) are functions over this state.
// Invariants: operations on one plugin (start, update, stop, a restart after its worker died) run
// one after another, never interleaved (`serial`); a plugin's state changes only through
// `setState`, which tells `onStateChange` only about the plugin the runtime holds under its id.
import { SandboxError } from '../../errors.ts';
import type { PluginOwner } from '../../store/plugins-core.ts';
import type { Instance } from '../instance.ts';
import type { PluginProcesses, PluginProcessesOptions } from '../processes.ts';
import type {
  JsonValue,
  PluginCapabilities,
  PluginFailure,
  PluginLimits,
  PluginLogLine,
  PluginState,
  PluginStatus,
} from '../types.ts';

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

export interface Plugin {
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

export interface RuntimeState {
  readonly options: PluginRuntimeOptions;
  readonly processes: PluginProcesses;
  readonly now: () => number;
  readonly plugins: Map<string, Plugin>;
  /** Live instances by id, for routing worker messages. */
  readonly instances: Map<number, { instance: Instance; worker: number }>;
  nextInstance: number;
  closed: boolean;
  /** When an isolate on a worker (by id) last ended by memory or CPU: its death soon after is that isolate's. */
  readonly hostileEnds: Map<number, number>;
}

export function createRuntimeState(options: PluginRuntimeOptions, processes: PluginProcesses): RuntimeState {
  return {
    options,
    processes,
    now: options.now ?? Date.now,
    plugins: new Map(),
    instances: new Map(),
    nextInstance: 0,
    closed: false,
    hostileEnds: new Map(),
  };
}

export function statusOf(plugin: Plugin): PluginStatus {
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
}

export function setState(state: RuntimeState, plugin: Plugin, to: PluginState): void {
  if (plugin.state === to) return;
  plugin.state = to;
  if (state.plugins.get(plugin.pluginId) === plugin)
    state.options.onStateChange?.(plugin.owner, statusOf(plugin));
}

export function log(state: RuntimeState, plugin: Plugin, line: Omit<PluginLogLine, 'at'>, dropped = 0): void {
  plugin.droppedLogs += dropped;
  plugin.logs.push({ at: state.now(), ...line });
  if (plugin.logs.length > plugin.limits.logRing) {
    plugin.logs.splice(0, plugin.logs.length - plugin.limits.logRing);
    plugin.droppedLogs++;
  }
}

export function failure(state: RuntimeState, f: Omit<PluginFailure, 'at'>): PluginFailure {
  return { ...f, at: state.now() };
}

/** Runs `fn` after every earlier operation on the plugin, whatever they did. */
export function serial<T>(plugin: Plugin, fn: () => Promise<T>): Promise<T> {
  const next = plugin.queue.then(fn, fn);
  plugin.queue = next.catch(() => undefined);
  return next;
}

export function owned(state: RuntimeState, owner: PluginOwner, pluginId: string): Plugin | undefined {
  const plugin = state.plugins.get(pluginId);
  return plugin && plugin.owner.tenantId === owner.tenantId && plugin.owner.agentId === owner.agentId
    ? plugin
    : undefined;
}

export function result(plugin: Plugin, error?: PluginFailure): RunResult {
  return error ? { ok: false, error, status: statusOf(plugin) } : { ok: true, status: statusOf(plugin) };
}

export function notFound(pluginId: string): SandboxError {
  return new SandboxError('NOT_FOUND', `Plugin ${pluginId} is not loaded; run it first.`, {
    data: { pluginId },
  });
}
