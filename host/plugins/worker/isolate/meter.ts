// What a plugin isolate is charged: the CPU it really uses, polled by the worker's meter
// (host/isolates/cpu.ts: sample() then charge(), so under load an entry waits for a core without
// paying for it), and its heap for the memory governor.
// Invariants: the entry that runs now pays only for its part of the time entered (returned ones
// paid theirs); past its per-entry budget or its bucket (cpuMsPerMinute, refilled by wall time) the
// plugin ends as `timeout`; an isolate found disposed ends as `memory`.
import { cpuMessage, end, type IsolateState, memoryMessage } from './state.ts';

export function sample(state: IsolateState): number {
  state.sampled = 0;
  if (state.ended) return 0;
  let entered: bigint;
  try {
    if (state.isolate.isDisposed) throw new Error('disposed');
    entered = state.isolate.cpuTime;
  } catch {
    end(state, 'memory', memoryMessage(state.limits));
    return 0;
  }
  state.sampled = Number(entered - state.enteredAt);
  state.enteredAt = entered;
  return state.sampled;
}

export function charge(state: IsolateState, cpuNs: number): void {
  const { limits, sampled } = state;
  const done = Math.min(state.enteredByDone, sampled);
  state.enteredByDone = 0;
  if (state.ended) return;
  state.charged += cpuNs;
  // The entry that runs now pays for its part of the time entered; returned ones paid theirs.
  if (state.inFlight > 0 && sampled > 0) state.entryCpu += (cpuNs * (sampled - done)) / sampled;
  if (state.entryCpu > state.entryBudgetNs) return void end(state, 'timeout', cpuMessage(limits));
  const now = performance.now();
  state.bucket = Math.min(
    state.bucketNs,
    state.bucket + ((now - state.refilledAt) * state.bucketNs) / 60_000,
  );
  state.refilledAt = now;
  state.bucket -= cpuNs;
  if (state.bucket < 0)
    end(
      state,
      'timeout',
      `the plugin used more CPU than its share of ${limits.cpuMsPerMinute} ms per minute`,
    );
}

/** The CPU charged since the previous poll (ns), or undefined once the plugin ended. */
export function check(state: IsolateState): number | undefined {
  const ran = state.charged;
  state.charged = 0;
  return state.ended ? undefined : ran;
}

export async function heapBytes(state: IsolateState): Promise<number | undefined> {
  if (state.ended || state.isolate.isDisposed) return undefined;
  try {
    const heap = await state.isolate.getHeapStatistics();
    return heap.used_heap_size + heap.externally_allocated_size;
  } catch {
    return undefined;
  }
}
