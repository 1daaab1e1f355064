// One program run inside a worker process, wired from its parts: worker-slot.ts holds the
// pre-warmed (or fresh) isolate slot and its bridge callbacks; worker-run-state.ts the run's state
// and how it ends (finish, close); worker-entry.ts enters the isolate, queued or inline, and
// measures an inline entry's CPU; worker-bridge.ts the program's calls, logs, result and the
// settled calls going back in. The worker enforces the limits itself (wall clock, CPU time, output,
// call count and sizes). Invariants: a slot serves exactly one run and is disposed when the run
// finishes, whatever the reason; `finish` runs once and always sends exactly one `done`; every
// string that comes out of the isolate is treated as untrusted text and size-checked. Hot path: a
// run allocates its state and the closures below once; a call or an entry allocates none of its own.
import type { Metered } from './cpu.ts';
import { deliverResults, onCall, onDone, onLog } from './worker-bridge.ts';
import { enter, queuedReturned } from './worker-entry.ts';
import type { RunIo, RunMessage, RunState } from './worker-run-state.ts';
import { cpuTimeout, finish, lostIsolate, memoryBeside, spend, wallTimeout } from './worker-run-state.ts';
import type { Slot } from './worker-slot.ts';

export type { RunIo } from './worker-run-state.ts';
export { createSlot, type Slot } from './worker-slot.ts';

export interface ActiveRun extends Metered {
  id: number;
  /** The isolate's heap limit (isolated-vm `memoryLimit`), in MB. */
  readonly memoryMb: number;
  /** The worker was told it may enter this run's isolate on its own thread. */
  readonly inline: boolean;
  /** Enters the isolate with the program (once, after the worker registered the run). */
  begin(): void;
  /** Settles the given calls (host call id, envelope); unknown ids and non-strings are ignored. */
  deliver(results: ReadonlyArray<readonly [unknown, unknown]>): void;
  cancel(): void;
  /**
   * Called by the worker's poll after the meter's sample() and charge() (which end the run past its
   * CPU budget): ends the run if its isolate died. Returns the CPU the run was charged since the
   * previous check, queued and inline entries alike, in ns (0: it did not run), or undefined once
   * the run is over (memory.ts Governed).
   */
  check(): number | undefined;
  /** Ends the run as `memory`: the worker saw it hold more than its limit allows (memory.ts). */
  outOfMemory(beside: boolean): void;
  /** The isolate's V8 heap plus its external memory, in bytes; undefined once it is gone. */
  heapBytes(): Promise<number | undefined>;
}

export const startRun = (slot: Slot, msg: RunMessage, io: RunIo): ActiveRun => {
  const { limits } = msg;
  const s: RunState = {
    slot,
    msg,
    io,
    limits,
    bindings: new Set(msg.bindings),
    logs: [],
    pending: new Map<number, number>(),
    outBytes: 0,
    calls: 0,
    nextCallId: 0,
    finished: false,
    inEntry: false,
    queued: 0,
    queuedReturned: () => queuedReturned(s),
    report: undefined,
    wall: undefined,
    deadline: performance.now() + limits.wallMs,
    cpuBudgetNs: limits.cpuMs * 1_000_000,
    cpuUsedNs: 0,
    ranNs: 0,
    enteredAt: 0n,
    enteredInlineNs: 0,
  };

  slot.attach({
    call: (isolateCallId, name, argsJson) => onCall(s, isolateCallId, name, argsJson),
    done: (result) => onDone(s, result),
    log: (code, text) => onLog(s, code, text),
  });

  s.wall = setTimeout(() => finish(s, wallTimeout(limits)), limits.wallMs);
  try {
    s.enteredAt = slot.isolate.cpuTime; // the prelude's install is not the run's
  } catch {
    // disposed: the first entry fails and says why
  }

  const limitsJson = JSON.stringify({
    maxOutputBytes: limits.maxOutputBytes,
    maxCallBytes: limits.maxCallBytes,
    maxResultBytes: limits.maxResultBytes,
    maxCalls: limits.maxCalls,
  });
  return {
    id: msg.id,
    memoryMb: limits.memoryMb,
    inline: msg.inline === true,
    begin: () => enter(s, slot.run, [msg.src, JSON.stringify(msg.bindings), msg.globalsJson, limitsJson]),
    deliver: (results) => deliverResults(s, results),
    cancel: () => finish(s, { kind: 'aborted', message: 'the run was cancelled' }),
    sample: () => {
      if (s.finished) return 0;
      let entered: bigint;
      try {
        if (slot.isolate.isDisposed) throw new Error('disposed');
        entered = slot.isolate.cpuTime;
      } catch {
        finish(s, lostIsolate(limits));
        return 0;
      }
      const queuedNs = Number(entered - s.enteredAt) - s.enteredInlineNs;
      s.enteredAt = entered;
      s.enteredInlineNs = 0;
      return Math.max(0, queuedNs);
    },
    charge: (cpuNs) => {
      if (s.finished) return;
      spend(s, cpuNs);
      if (s.cpuUsedNs > s.cpuBudgetNs) finish(s, cpuTimeout(limits));
    },
    check: () => {
      if (s.finished) return undefined;
      if (slot.isolate.isDisposed) {
        finish(s, lostIsolate(limits));
        return undefined;
      }
      const ran = s.ranNs;
      s.ranNs = 0;
      return ran;
    },
    outOfMemory: (beside) => finish(s, beside ? memoryBeside(limits) : lostIsolate(limits)),
    heapBytes: async () => {
      if (s.finished || slot.isolate.isDisposed) return undefined;
      try {
        const heap = await slot.isolate.getHeapStatistics();
        return heap.used_heap_size + heap.externally_allocated_size;
      } catch {
        return undefined;
      }
    },
  };
};
