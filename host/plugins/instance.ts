// One loaded package seen from the API process: the isolate a worker holds for it (by id), what it
// registered through the capabilities (tools and inspection providers), the tool calls it runs and
// makes, its event subscription. This module wires the parts, each in its own module under
// instance/: state.ts holds the state and ends the instance, exactly once (`finish`, `fail`, with
// the invariants); lifecycle.ts loads, unloads and loses it; registrations.ts checks and holds its
// tools and providers; calls.ts runs the calls into it and its own calls out; events.ts delivers
// the host events it listens to, rate-capped.
// Invariant: once the instance ended, `handle` ignores whatever still arrives for its id.

import { onCall, onDone } from './instance/calls.ts';
import { listen } from './instance/events.ts';
import { busy, load, lost, onLoaded, onUnloaded, reclaimed, unload } from './instance/lifecycle.ts';
import { provide, registerTool, withdraw } from './instance/registrations.ts';
import { createInstanceState, fail, type InstanceOptions, type InstanceState } from './instance/state.ts';
import type { PluginWorkerToHost } from './protocol.ts';
import type { JsonValue } from './types.ts';

export { EVENTS_PER_SECOND } from './instance/events.ts';
export { isolateLimits } from './instance/lifecycle.ts';
export type { InstanceOptions } from './instance/state.ts';

export interface Instance {
  readonly id: number;
  readonly ended: boolean;
  /** Names of the tools registered now. */
  tools(): string[];
  /** Ids of the inspection providers provided now. */
  providers(): string[];
  /** Resolves with the plugin's name once applied; rejects with its failure. */
  load(source: string, config: JsonValue): Promise<string>;
  /** Disposes the plugin's scope and its isolate; resolves when both are gone. */
  unload(): Promise<void>;
  handle(message: PluginWorkerToHost): void;
  /** The worker died; `excused`: another plugin on it is known to have brought it down. */
  lost(excused?: boolean): void;
  /** True while it starts, stops, or has a callback in flight: its worker is not to be reclaimed. */
  busy(): boolean;
  /** Its worker was taken for another tenant: it ends now, failed ISOLATE_UNAVAILABLE. */
  reclaimed(): void;
}

export function createInstance(options: InstanceOptions): Instance {
  const state = createInstanceState(options);
  return {
    id: options.id,
    get ended() {
      return state.ended;
    },
    tools: () => [...state.registered.values()].map((r) => r.name),
    providers: () => [...state.provided.values()].map((p) => p.name),
    load: (source, config) => load(state, source, config),
    unload: () => unload(state),
    handle: (message) => onWorkerMessage(state, message),
    lost: (excused = false) => lost(state, excused),
    busy: () => busy(state),
    reclaimed: () => reclaimed(state),
  };
}

/** One message from the worker for this instance, routed to the part that owns it. */
function onWorkerMessage(state: InstanceState, message: PluginWorkerToHost): void {
  if (state.ended) return;
  switch (message.t) {
    case 'loaded':
      return void onLoaded(state, message.name);
    case 'register':
      return void registerTool(state, message);
    case 'unregister':
      return void withdraw(state.registered, message.token);
    case 'provide':
      return void provide(state, message);
    case 'unprovide':
      return void withdraw(state.provided, message.token);
    case 'listen':
      return void listen(state, message.name, message.on);
    case 'call':
      return void onCall(state, message);
    case 'log':
      return void state.options.log({ level: message.level, text: message.text }, message.dropped);
    case 'done':
      return void onDone(state, message);
    case 'failed':
      return void fail(state, {
        kind: message.kind,
        message: message.message,
        ...(message.stack ? { stack: message.stack } : {}),
      });
    case 'unloaded':
      return void onUnloaded(state);
  }
}
