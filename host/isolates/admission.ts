// A run's way in and the caller's way to stop it: the request is checked (validate.ts) and compiled
// (compile.ts) in this process, then queued with its limits for placement.ts; the caller's signal
// ends it, at once while it is queued, through its worker (with a kill as backstop) once dispatched.
// Invariant: the promise admitRun returns never rejects; a request refused before it is queued
// resolves with its failure and zero stats.
import { compileProgram } from './compile.ts';
import { failed, finishRun, type HostRun, type HostState } from './host-run.ts';
import { pump } from './placement.ts';
import type { FailureKind, RunLimits, RunOutcome, RunRequest } from './types.ts';
import { checkRequest } from './validate.ts';

export function admitRun(state: HostState, request: RunRequest): Promise<RunOutcome> {
  return new Promise<RunOutcome>((resolve) => {
    const startedAt = performance.now();
    const limits: RunLimits = { ...state.config.defaults, ...request.limits };
    const refuse = (kind: FailureKind, message: string) =>
      resolve({
        ok: false,
        kind,
        message,
        logs: [],
        stats: { calls: 0, maxInFlight: 0, wallMs: performance.now() - startedAt, inline: false },
      });
    if (state.closed) return refuse('aborted', 'the isolate host is shut down');
    const problem = checkRequest(request, limits);
    if (problem) return refuse(problem.kind, problem.message);
    if (request.signal?.aborted) return refuse('aborted', 'the run was aborted before it started');
    void compileProgram(request.code, request.language ?? 'ts', request.owner).then((compiled) => {
      if (!compiled.ok) return refuse(compiled.kind ?? 'compile', compiled.message);
      if (state.closed) return refuse('aborted', 'the isolate host is shut down');
      const run: HostRun = {
        id: ++state.nextId,
        request,
        bindings: new Set(request.bindings),
        limits,
        src: compiled.program.js,
        map: compiled.program.map,
        globalsJson: JSON.stringify(request.globals ?? {}),
        startedAt,
        inline: false,
        calls: new AbortController(),
        callCount: 0,
        pending: 0,
        maxPending: 0,
        waitingCalls: [],
        timers: [],
        detach: () => undefined,
        resolve,
        settled: false,
        counted: false,
      };
      const signal = request.signal;
      if (signal) {
        const onAbort = () => cancelRun(state, run);
        signal.addEventListener('abort', onAbort, { once: true });
        run.detach = () => signal.removeEventListener('abort', onAbort);
        if (signal.aborted) return refuse('aborted', 'the run was aborted before it started');
      }
      state.runs.set(run.id, run);
      state.queue.push(run);
      pump(state);
    });
  });
}

/** The caller aborted: a queued run ends now; a dispatched one is cancelled by its worker, or killed. */
function cancelRun(state: HostState, run: HostRun): void {
  const aborted = failed('aborted', 'the run was aborted');
  const handle = run.worker;
  if (!handle) {
    finishRun(state, run, aborted);
    return;
  }
  run.calls.abort();
  state.supervisor.send(handle, { t: 'cancel', id: run.id });
  run.timers.push(
    setTimeout(() => {
      finishRun(state, run, aborted);
      state.supervisor.kill(handle, 'cancelled run did not end');
    }, state.config.killGraceMs),
  );
}
