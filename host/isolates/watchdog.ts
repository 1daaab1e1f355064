// Watches the workers dedicated to an inline run. An inline entry holds its worker's thread for at
// most inlineEntryMaxMs (isolated-vm's timeout, wall-clock time: INLINE_WAIT_FACTOR × the CPU
// budget, which a starved program may need, or the wall clock if sooner); a worker silent for
// longer is stuck where no timeout reaches (a non-interruptible builtin, program getters run by
// isolated-vm after the entry): it is killed, failing only the run it was dedicated to.
import { failed, finishRun, type HostState } from './host-run.ts';
import { ALIVE_MS, inlineEntryMaxMs } from './protocol.ts';

/** Starts the watch; the returned function stops it. */
export function watchInlineRuns(state: HostState): () => void {
  const timer = setInterval(() => checkInlineRuns(state), ALIVE_MS);
  timer.unref();
  return () => clearInterval(timer);
}

function checkInlineRuns(state: HostState): void {
  const now = performance.now();
  for (const handle of state.supervisor.handles()) {
    const run = handle.inlineRun === undefined ? undefined : state.runs.get(handle.inlineRun);
    if (!run || now - handle.aliveAt <= inlineEntryMaxMs(run.limits) + state.config.killGraceMs + ALIVE_MS)
      continue;
    finishRun(state, run, failed('timeout', `the program used more than ${run.limits.cpuMs} ms of CPU time`));
    state.supervisor.kill(handle, 'an inline entry ran past its CPU budget');
  }
}
