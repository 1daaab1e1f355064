// One plugin instance's state in the API process, and its one way out. The other parts of the
// instance (calls.ts, registrations.ts, events.ts, lifecycle.ts) are functions over this state.
// Invariants: the host is the authority over registrations — whatever the isolate does, when the
// instance ends (unloaded, failed, its worker died) every tool and provider it registered is disposed,
// its pending executes are rejected, its own calls are aborted and its subscription is dropped,
// exactly once (`finish`); after that it posts nothing (`post`) and ignores whatever still arrives
// for its id.
import { SandboxError } from '../../errors.ts';
import type { PluginPlacement, PluginProcesses } from '../processes.ts';
import type { JsonValue, PluginCapabilities, PluginFailure, PluginLimits, PluginLogLine } from '../types.ts';

export interface InstanceOptions {
  id: number;
  pluginId: string;
  /** Its seat on a worker of its tenant, given back when the instance ends. */
  placement: PluginPlacement;
  processes: PluginProcesses;
  limits: PluginLimits;
  capabilities: PluginCapabilities;
  log(line: Omit<PluginLogLine, 'at'>, dropped?: number): void;
  /** The instance ended while loaded (not through unload): failed, or its worker died. */
  onEnd(failure: Omit<PluginFailure, 'at'>, suspect: boolean): void;
}

/** A call into the plugin (a tool's execute or a provider's query) waiting for its `done`. */
export interface PendingExecute {
  resolve(value: JsonValue): void;
  reject(error: unknown): void;
  callId: string;
  controller: AbortController;
}

/** Something the plugin registered with the host, and how the host takes it back. */
export interface Registration {
  name: string;
  dispose: () => void;
}

export interface InstanceState {
  readonly options: InstanceOptions;
  /** Tools by token. */
  readonly registered: Map<number, Registration>;
  /** Inspection providers by token (the tools' token space). */
  readonly provided: Map<number, Registration>;
  /** Calls into the plugin by entry. */
  readonly executes: Map<number, PendingExecute>;
  /** Host event names the plugin listens to. */
  readonly listening: Set<string>;
  /** Aborts the plugin's own calls when the instance ends. */
  readonly own: AbortController;
  unsubscribe: (() => void) | undefined;
  ended: boolean;
  loaded: boolean;
  nextEntry: number;
  /**
   * When an entry nobody acknowledges (an event, a settled call) last went into the isolate: a crash
   * soon after it is blamed on this plugin, as one during its load or one of its executes is.
   */
  lastEntryAt: number;
  /** When such an entry went in outside any call into the plugin (its callback may still run: `busy`). */
  looseEntryAt: number;
  /** The plugin's own calls out, unanswered. */
  callsOut: number;
  eventWindow: number;
  eventsInWindow: number;
  loading: { resolve(name: string): void; reject(failure: Omit<PluginFailure, 'at'>): void } | undefined;
  unloading: (() => void) | undefined;
}

export function createInstanceState(options: InstanceOptions): InstanceState {
  return {
    options,
    registered: new Map(),
    provided: new Map(),
    executes: new Map(),
    listening: new Set(),
    own: new AbortController(),
    unsubscribe: undefined,
    ended: false,
    loaded: false,
    nextEntry: 0,
    lastEntryAt: Number.NEGATIVE_INFINITY,
    looseEntryAt: Number.NEGATIVE_INFINITY,
    callsOut: 0,
    eventWindow: 0,
    eventsInWindow: 0,
    loading: undefined,
    unloading: undefined,
  };
}

/** Posts to the instance's worker while it runs; false once it ended or the worker is gone. */
export function post(state: InstanceState, message: Parameters<PluginProcesses['post']>[1]): boolean {
  if (state.ended) return false;
  if (message.t === 'event' || message.t === 'result') state.lastEntryAt = performance.now();
  return state.options.processes.post(state.options.placement.worker, message);
}

/** Ends the instance: everything it holds in the host is undone, once. */
export function finish(state: InstanceState): void {
  if (state.ended) return;
  state.ended = true;
  state.options.processes.release(state.options.placement);
  state.own.abort();
  state.unsubscribe?.();
  state.unsubscribe = undefined;
  for (const { dispose } of state.registered.values()) safely(dispose);
  state.registered.clear();
  for (const { dispose } of state.provided.values()) safely(dispose);
  state.provided.clear();
  for (const pending of state.executes.values()) {
    pending.controller.abort();
    pending.reject(
      new SandboxError(
        'ABORTED',
        `Plugin ${state.options.pluginId} stopped before the call into it (a tool or an inspection method) finished; cordis_inspect_self says why.`,
      ),
    );
  }
  state.executes.clear();
}

/**
 * Ends the instance with a failure: a load in progress rejects with it, an unload in progress
 * completes, and otherwise the owner hears of it (`onEnd`).
 */
export function fail(state: InstanceState, failure: Omit<PluginFailure, 'at'>, suspect = true): void {
  if (state.ended) return;
  const wasLoading = state.loading;
  state.loading = undefined;
  if (!state.loaded && wasLoading) {
    // The worker disposes the isolate of a plugin that failed; a refusal made here must ask it to.
    if (failure.kind === 'refused' || failure.kind === 'timeout')
      post(state, { t: 'unload', id: state.options.id });
    finish(state);
    return void wasLoading.reject(failure);
  }
  if (failure.kind === 'refused') post(state, { t: 'unload', id: state.options.id });
  finish(state);
  const done = state.unloading;
  state.unloading = undefined;
  if (done) return void done();
  state.options.onEnd(failure, suspect);
}

export function safely(fn: () => void): void {
  try {
    fn();
  } catch {
    // a registry's disposer that throws must not keep the others from running
  }
}
