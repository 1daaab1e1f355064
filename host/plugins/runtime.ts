// The creator-plugin runtime: plugins by id, each stopped | starting | running | failed, each
// running one package in an isolate of its own on a worker process of its tenant (processes.ts).
// This module wires the parts, each in its own module under runtime/: state.ts holds the plugins,
// the live instances and the helpers over them (one plugin's operations never interleave:
// `serial`); instances.ts loads and unloads a plugin's instance, routes worker messages and deaths,
// and blames a death with care (a plugin fails as `crash` only after two deaths it was to blame
// for); operations.ts runs start, update (Cordis HMR's), stop, forget and close.
import type { PluginOwner } from '../store/plugins-core.ts';
import { createPluginProcesses } from './processes.ts';
import { onWorkerExit, onWorkerMessage, onWorkerReclaimed, workerBusy } from './runtime/instances.ts';
import { close, forget, start, stop, update } from './runtime/operations.ts';
import {
  createRuntimeState,
  owned,
  type PluginRuntimeOptions,
  type RunPackage,
  type RunResult,
  type StartInput,
  statusOf,
} from './runtime/state.ts';
import type { PluginStatus } from './types.ts';

export type { PluginRuntimeOptions, RunPackage, RunResult, StartInput } from './runtime/state.ts';

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

export const createPluginRuntime = (options: PluginRuntimeOptions = {}): PluginRuntime => {
  const processes = options.processes ?? createPluginProcesses(options.processOptions);
  const state = createRuntimeState(options, processes);
  processes.listen({
    message: (worker, message) => onWorkerMessage(state, worker, message),
    exit: (worker) => onWorkerExit(state, worker),
    busy: (worker) => workerBusy(state, worker),
    reclaimed: (worker) => onWorkerReclaimed(state, worker),
  });
  return {
    start: (input) => start(state, input),
    update: (owner, pluginId, pkg) => update(state, owner, pluginId, pkg),
    stop: (owner, pluginId) => stop(state, owner, pluginId),
    forget: (owner, pluginId) => forget(state, owner, pluginId),
    status(owner, pluginId) {
      const plugin = owned(state, owner, pluginId);
      return plugin === undefined ? undefined : statusOf(plugin);
    },
    list: (owner) =>
      [...state.plugins.values()]
        .filter((p) => p.owner.tenantId === owner.tenantId && p.owner.agentId === owner.agentId)
        .map(statusOf),
    pids: (tenantId) => processes.pids(tenantId),
    close: () => close(state),
  };
};
