// Entering a run's isolate (the start, and each delivery of settled calls: worker-run.ts), one of
// two ways, chosen per entry by the worker (`inline()`): queued on isolated-vm's thread pool, or
// inline on this thread with applySync while this run is the worker's only one. Inline saves the
// two thread hand-offs of every call (isolate thread -> this thread -> isolate thread), about a
// third of a brokered call's cost; while an inline entry runs, this thread does nothing else, so
// the worker only goes inline when no other run could wait behind it.
//
// The CPU budget counts CPU the worker process really spent on the run, never time it waited for
// a core (isolated-vm's `cpuTime` and `timeout` count wall-clock time while the isolate is entered:
// cpu.ts). Queued entries are charged by the worker's meter every poll (cpu.ts). An inline entry
// runs on this thread while the run is the worker's only one, so what the process used during it
// is the entry's; nothing polls meanwhile, and its one interrupt is isolated-vm's timeout, which
// ends the entry for good. That timeout is the rest of the wall clock, or INLINE_WAIT_FACTOR times
// the CPU budget left (protocol.ts) if sooner; when it fires, the CPU measured decides: budget
// spent (a busy loop) is the CPU-budget error, else the program was starved past that factor.
//
// A program resumes only inside an entry (the prelude leaves it no timer or other event of its
// own), and an entry returns only after its microtasks ran. So when every entry has returned (the
// inline one, and each queued one, whose return the worker observes), no call of the run is
// pending and it has no outcome, nothing can ever resume it: it ends at once as `stalled` instead
// of holding its slot until the wall clock. That check is a comparison after each entry.
import type ivm from 'isolated-vm';
import { INLINE_WAIT_FACTOR } from './protocol.ts';
import type { Failure, RunState } from './worker-run-state.ts';
import {
  close,
  cpuTimeout,
  finish,
  lostIsolate,
  spend,
  stalled,
  starved,
  wallTimeout,
} from './worker-run-state.ts';

/**
 * What an inline entry's throw means, judged by state, never by its message (which the program
 * can write: isolated-vm ends each applySync by throwing a promise the program left rejected
 * without a handler). The isolate is gone: memory. The entry took its whole timeout: the CPU
 * budget if the run has spent it, else the wall clock if that is up, else it was starved. Anything
 * else is the program's own unhandled rejection, which a queued entry drops as well.
 */
function entryFailed(s: RunState, tookMs: number, timeoutMs: number, cpuNs: number): Failure | undefined {
  if (s.slot.isolate.isDisposed) return lostIsolate(s.limits);
  if (tookMs < timeoutMs - 1) return undefined;
  if (s.cpuUsedNs >= s.cpuBudgetNs) return cpuTimeout(s.limits);
  return performance.now() >= s.deadline - 1 ? wallTimeout(s.limits) : starved(s.limits, tookMs, cpuNs);
}

/** An inline entry's timeout: the rest of the wall clock, or INLINE_WAIT_FACTOR × the CPU left (ms). */
function entryTimeoutMs(s: RunState): number {
  const cpuLeftMs = (s.cpuBudgetNs - s.cpuUsedNs) / 1e6;
  return Math.max(1, Math.ceil(Math.min(s.deadline - performance.now(), INLINE_WAIT_FACTOR * cpuLeftMs)));
}

/**
 * After an entry returned: with no entry in flight, no call pending and no outcome, nothing can
 * resume the program (see the header). Exact, never a guess: a program that waits on anything
 * that can still happen has a call pending or an entry on its way.
 */
function afterEntry(s: RunState): void {
  if (s.finished || s.inEntry || s.queued > 0 || s.pending.size > 0) return;
  finish(s, s.slot.isolate.isDisposed ? lostIsolate(s.limits) : stalled());
}

/** A queued entry returned (RunState.queuedReturned calls this, bound once per run). */
export function queuedReturned(s: RunState): void {
  s.queued--;
  afterEntry(s);
}

/** One entry into the isolate, inline or queued. */
export function enter(s: RunState, ref: ivm.Reference<(...args: never[]) => unknown>, args: unknown[]): void {
  if (s.finished) return;
  if (!s.io.inline()) {
    // Queued: this thread goes on at once and learns that the entry returned from its promise,
    // which settles after every call and log the entry made (isolated-vm hands both to this
    // thread in one queue, in order). It rejects with the program's unhandled rejection (dropped,
    // as inline) or when the isolate is gone (memory, seen here or at the next check).
    try {
      s.queued++;
      ref
        .apply(undefined, [...args, false] as never[], { arguments: { copy: true } })
        .then(s.queuedReturned, s.queuedReturned);
    } catch {
      s.queued--;
      finish(
        s,
        s.slot.isolate.isDisposed ? lostIsolate(s.limits) : { kind: 'crash', message: 'the isolate failed' },
      );
    }
    return;
  }
  const timeoutMs = entryTimeoutMs(s);
  const startedAt = performance.now();
  const cpuBefore = processCpuUs();
  let threw = false;
  s.inEntry = true;
  try {
    ref.applySync(undefined, [...args, true] as never[], { arguments: { copy: true }, timeout: timeoutMs });
  } catch {
    threw = true;
  } finally {
    s.inEntry = false;
    // This run is the worker's only one: the process's CPU during the entry is the entry's.
    const cpuNs = (processCpuUs() - cpuBefore) * 1000;
    const tookMs = performance.now() - startedAt;
    s.enteredInlineNs += tookMs * 1e6;
    spend(s, cpuNs);
    const failure = threw ? entryFailed(s, tookMs, timeoutMs, cpuNs) : undefined;
    if (failure) finish(s, failure);
    else if (s.cpuUsedNs > s.cpuBudgetNs) finish(s, cpuTimeout(s.limits));
    close(s);
  }
  afterEntry(s);
}

/** CPU this process used so far, all its threads, in µs. */
function processCpuUs(): number {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
}
