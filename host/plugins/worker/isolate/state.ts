// One plugin isolate's state inside its worker process, and its one way out. The other parts
// (messages.ts, entries.ts, meter.ts) are functions over this state.
// Invariants: once `ended`, the isolate is disposed and exactly one `failed` or `unloaded` went out
// for this id (`end`, `unloaded`), and nothing else goes out for it.
import type ivm from 'isolated-vm';
import type { HostToPluginWorker, IsolateLimits, PluginWorkerToHost } from '../../protocol.ts';
import { clip, MAX_ERROR_CHARS } from '../../protocol.ts';
import type { PluginFailureKind } from '../../types.ts';

export type LoadMessage = Extract<HostToPluginWorker, { t: 'load' }>;
export type Entry = ivm.Reference<(...args: never[]) => void>;

export interface IsolateState {
  readonly id: number;
  readonly limits: IsolateLimits;
  readonly isolate: ivm.Isolate;
  readonly send: (message: PluginWorkerToHost) => void;
  ended: boolean;
  unloading: boolean;
  inFlight: number;
  /** isolated-vm's `cpuTime` at the last sample (time entered, not CPU: host/isolates/cpu.ts). */
  enteredAt: bigint;
  /** Time entered since the last sample that belongs to entries that have returned (ns). */
  enteredByDone: number;
  /** The last sample (ns entered), and the CPU charged since the previous poll (ns). */
  sampled: number;
  charged: number;
  /** CPU charged to the entry that runs now (ns); entries run one after another. */
  entryCpu: number;
  readonly entryBudgetNs: number;
  /** The CPU bucket (cpuMsPerMinute), in ns: full at load, refilled by wall time, drained by CPU. */
  readonly bucketNs: number;
  bucket: number;
  refilledAt: number;
  /** The plugin's own tool calls in flight, by id. */
  readonly calls: Set<number>;
  readonly maxMessageChars: number;
}

export function createIsolateState(
  msg: LoadMessage,
  isolate: ivm.Isolate,
  send: (message: PluginWorkerToHost) => void,
): IsolateState {
  const { id, limits } = msg;
  return {
    id,
    limits,
    isolate,
    send,
    ended: false,
    unloading: false,
    inFlight: 0,
    enteredAt: 0n,
    enteredByDone: 0,
    sampled: 0,
    charged: 0,
    entryCpu: 0,
    entryBudgetNs: limits.cpuMsPerCallback * 1_000_000,
    bucketNs: limits.cpuMsPerMinute * 1_000_000,
    bucket: limits.cpuMsPerMinute * 1_000_000,
    refilledAt: performance.now(),
    calls: new Set(),
    maxMessageChars: limits.maxValueBytes + 64 * 1024,
  };
}

export function dispose(state: IsolateState): void {
  try {
    if (!state.isolate.isDisposed) state.isolate.dispose();
  } catch {
    // already disposed by a memory failure
  }
}

export function end(state: IsolateState, kind: PluginFailureKind, message: string, stack?: string): void {
  if (state.ended) return;
  state.ended = true;
  dispose(state);
  const { id, send } = state;
  if (state.unloading) return void send({ t: 'unloaded', id });
  send({ t: 'failed', id, kind, message: clip(message, MAX_ERROR_CHARS), ...(stack ? { stack } : {}) });
}

export function unloaded(state: IsolateState): void {
  if (state.ended) return;
  state.ended = true;
  dispose(state);
  state.send({ t: 'unloaded', id: state.id });
}

export const memoryMessage = (limits: IsolateLimits) =>
  `the plugin ran out of memory (limit ${limits.memoryMb} MB)`;
export const cpuMessage = (limits: IsolateLimits) =>
  `a callback of the plugin ran longer than its CPU budget of ${limits.cpuMsPerCallback} ms`;
