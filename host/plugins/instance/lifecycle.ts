// An instance's life: load (the worker applies the source within startWallMs), unload (the worker
// disposes the isolate, or the host stops waiting), and loss (the worker died).
// Invariants: a load settles exactly once — with the plugin's name on 'loaded', or with its failure
// (state.ts `fail`), a timeout or a stop while it started; unload always resolves, by the worker's
// 'unloaded' or after a grace of two callbacks' CPU plus 2 s; a lost worker ends the instance as a
// crash, suspect (counted against this plugin) only when it was busy in or just after an entry; a
// reclaimed one (taken idle for another tenant, never while `busy`) as unavailable, not a crash.
import type { IsolateLimits } from '../protocol.ts';
import type { JsonValue, PluginLimits } from '../types.ts';
import { fail, finish, type InstanceState, post } from './state.ts';

export const isolateLimits = (limits: PluginLimits): IsolateLimits => ({
  memoryMb: limits.memoryMb,
  cpuMsPerCallback: limits.cpuMsPerCallback,
  callbackWallMs: limits.callbackWallMs,
  cpuMsPerMinute: limits.cpuMsPerMinute,
  maxTools: limits.maxTools,
  maxProviders: limits.maxProviders,
  maxProviderMethods: limits.maxProviderMethods,
  maxCallsInFlight: limits.maxCallsInFlight,
  maxMessagesPerCallback: limits.maxMessagesPerCallback,
  logLinesPerCallback: limits.logLinesPerCallback,
  maxLogChars: limits.maxLogChars,
  maxValueBytes: limits.maxValueBytes,
});

/** Resolves with the plugin's name once applied; rejects with its failure. */
export function load(state: InstanceState, source: string, config: JsonValue): Promise<string> {
  const { id, limits } = state.options;
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        fail(state, {
          kind: 'timeout',
          message: `the plugin did not finish starting within ${limits.startWallMs} ms`,
        }),
      limits.startWallMs,
    );
    state.loading = {
      resolve: (name) => {
        clearTimeout(timer);
        resolve(name);
      },
      reject: (failure) => {
        clearTimeout(timer);
        reject(failure);
      },
    };
    const sent = post(state, {
      t: 'load',
      id,
      source,
      configJson: JSON.stringify(config ?? {}),
      limits: isolateLimits(limits),
    });
    if (!sent)
      fail(state, { kind: 'crash', message: 'the plugin worker went away before the plugin loaded' });
  });
}

/** The worker applied the plugin. */
export function onLoaded(state: InstanceState, name: string): void {
  state.loaded = true;
  state.loading?.resolve(name);
  state.loading = undefined;
}

/** Disposes the plugin's scope and its isolate; resolves when both are gone. */
export function unload(state: InstanceState): Promise<void> {
  if (state.ended) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const timer = setTimeout(
      () => {
        state.unloading = undefined;
        finish(state);
        resolve();
      },
      state.options.limits.cpuMsPerCallback * 2 + 2000,
    );
    state.unloading = () => {
      clearTimeout(timer);
      resolve();
    };
    if (state.loading) {
      state.loading.reject({ kind: 'apply', message: 'the plugin was stopped while it started' });
      state.loading = undefined;
    }
    if (!post(state, { t: 'unload', id: state.options.id })) {
      finish(state);
      state.unloading = undefined;
      clearTimeout(timer);
      resolve();
    }
  });
}

/** The worker disposed the isolate. */
export function onUnloaded(state: InstanceState): void {
  finish(state);
  const resolve = state.unloading;
  state.unloading = undefined;
  resolve?.();
}

/** The worker died; `excused`: another plugin on it is known to have brought it down. */
export function lost(state: InstanceState, excused: boolean): void {
  const suspect =
    !excused &&
    (state.executes.size > 0 ||
      state.loading !== undefined ||
      performance.now() - state.lastEntryAt < state.options.limits.cpuMsPerCallback * 2 + 250);
  fail(state, { kind: 'crash', message: 'the plugin process died while this plugin ran' }, suspect);
}

/**
 * A callback may be in flight: it starts or stops, a call into it or one of its own calls is
 * unanswered, or an entry nobody acknowledges (an event, the answer to a call made outside any
 * call into it) went in within two callbacks' CPU.
 */
export function busy(state: InstanceState): boolean {
  if (state.ended) return false;
  return (
    !state.loaded ||
    state.loading !== undefined ||
    state.unloading !== undefined ||
    state.executes.size > 0 ||
    state.callsOut > 0 ||
    performance.now() - state.looseEntryAt < state.options.limits.cpuMsPerCallback * 2 + 250
  );
}

/** Its worker was taken, idle, for another tenant (processes/reclaim.ts). */
export function reclaimed(state: InstanceState): void {
  fail(
    state,
    {
      kind: 'unavailable',
      code: 'ISOLATE_UNAVAILABLE',
      message:
        "its plugin worker process was given to another tenant: the host runs as many as it may (DSH_PLUGIN_WORKERS) and this plugin's was the idle one of the tenant holding the most; run it again (cordis_run) to start it",
    },
    false,
  );
}
