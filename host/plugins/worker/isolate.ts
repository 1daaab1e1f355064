// One loaded package inside a plugin worker process: its isolate (isolated-vm, a heap limit of its
// own), the prelude (prelude.ts) and the entries into it. This module wires the parts, each in its
// own module under isolate/: state.ts holds the state and ends the plugin, exactly once (`end`,
// `unloaded`); entries.ts installs the prelude and queues every entry on isolated-vm's thread pool
// under a wall-clock backstop; meter.ts charges the CPU it really uses (per entry and per minute)
// and reads its heap; messages.ts checks what the isolate sends, all of it untrusted, before
// anything is forwarded.
import ivm from 'isolated-vm';
import type { Metered } from '../../isolates/cpu.ts';
import type { PluginWorkerToHost } from '../protocol.ts';
import { HOST_EVENTS } from '../types.ts';
import { deliver, enter, install, unload } from './isolate/entries.ts';
import { charge, check, heapBytes, sample } from './isolate/meter.ts';
import { createIsolateState, dispose, end, type LoadMessage, memoryMessage } from './isolate/state.ts';

export { bodyStack } from './isolate/messages.ts';

export interface PluginIsolate extends Metered {
  readonly id: number;
  readonly memoryMb: number;
  /** Entries sent into the isolate and not yet returned (a crash is blamed on plugins with some). */
  readonly busy: boolean;
  execute(entry: number, token: number, argsJson: string, callId: string): void;
  deliver(results: ReadonlyArray<readonly [number, string]>): void;
  event(name: string, dataJson: string): void;
  /** Disposes the plugin's scope, then the isolate; `unloaded` follows (also when it already ended). */
  unload(): void;
  /**
   * Poll, after the meter's sample() and charge() (which end the plugin past a CPU budget or when
   * its isolate died): the CPU it was charged since the previous poll (ns), for the memory governor.
   */
  check(): number | undefined;
  /** The worker saw it hold more memory than its limit allows (memory.ts). */
  outOfMemory(beside: boolean): void;
  heapBytes(): Promise<number | undefined>;
  /** Ends without a message (the worker is shutting down). */
  dispose(): void;
}

export const loadPlugin = async (
  msg: LoadMessage,
  send: (message: PluginWorkerToHost) => void,
): Promise<PluginIsolate> => {
  const { id, limits } = msg;
  const isolate = new ivm.Isolate({
    memoryLimit: limits.memoryMb,
    // V8 lost control of the isolate: the documented answer is to end the process; the runtime
    // sees a crash and starts the plugins that were idle again.
    onCatastrophicError: (message) => {
      process.stderr.write(`plugin isolate catastrophic error: ${message}\n`);
      process.abort();
    },
  });
  const state = createIsolateState(msg, isolate, send);
  const entries = await install(state);
  const { refs } = entries;
  enter(entries, refs.start, [
    msg.source,
    msg.configJson,
    JSON.stringify(limits),
    JSON.stringify(HOST_EVENTS),
  ]);
  return {
    id,
    memoryMb: limits.memoryMb,
    get busy() {
      return state.inFlight > 0;
    },
    execute: (entry, token, argsJson, callId) =>
      enter(entries, refs.execute, [entry, token, argsJson, callId]),
    deliver: (results) => deliver(entries, results),
    event: (name, dataJson) => enter(entries, refs.event, [name, dataJson]),
    unload: () => unload(entries),
    sample: () => sample(state),
    charge: (cpuNs) => charge(state, cpuNs),
    check: () => check(state),
    outOfMemory: () => end(state, 'memory', memoryMessage(limits)),
    heapBytes: () => heapBytes(state),
    dispose() {
      state.ended = true;
      dispose(state);
    },
  };
};
