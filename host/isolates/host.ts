// The isolate host as the rest of the service sees it: `createIsolateHost(options).run(request)`.
// This module wires the parts, each in its own module: admission.ts checks, compiles and queues a
// run (and cancels it); placement.ts dispatches queued runs to supervised workers (supervisor.ts),
// fairly between owners; broker.ts brokers the program's tool calls to `onCall` (counts, caps,
// sizes, pending calls; which calls overlap is onCall's decision, the tool pipeline's gate);
// outcome.ts turns a worker's report into the caller's outcome; watchdog.ts kills a worker stuck
// in an inline entry; host-run.ts ends a run, exactly once.
// Invariants: run() never rejects; every run settles exactly once (finishRun); a worker's message
// is honoured only for runs dispatched to that worker; nothing of a worker's text reaches the caller
// without a size cap and a shape check; every deadline has a host-side backstop that kills the worker.
import { admitRun } from './admission.ts';
import { onProgramCall } from './broker.ts';
import { compileProgram } from './compile.ts';
import { hostConfigOf } from './host-config.ts';
import { failed, finishRun, type HostState } from './host-run.ts';
import { BUDGET_SHARE } from './memory.ts';
import { settledOf } from './outcome.ts';
import { pump } from './placement.ts';
import type { WorkerToHost } from './protocol.ts';
import type { WorkerHandle } from './supervisor.ts';
import { createSupervisor } from './supervisor.ts';
import type { IsolateHost, IsolateHostOptions } from './types.ts';
import { watchInlineRuns } from './watchdog.ts';

export function createIsolateHost(options: IsolateHostOptions = {}): IsolateHost {
  const config = hostConfigOf(options);
  let pumpQueued = false;
  const state: HostState = {
    config,
    supervisor: createSupervisor({
      count: config.workers,
      heapMb: config.workerHeapMb,
      rssMb: config.workerRssMb,
      killGraceMs: config.killGraceMs,
      workerArgs: {
        prewarm: config.prewarm,
        memoryMb: config.defaults.memoryMb,
        budgetMb: Math.floor(config.workerRssMb * BUDGET_SHARE),
      },
      onReady: () => pump(state),
      onMessage: (handle, message) => onWorkerMessage(state, handle, message),
      onExit: (handle, description) => onWorkerExit(state, handle, description),
      ...(options.onEvent ? { onEvent: options.onEvent } : {}),
    }),
    runs: new Map(),
    queue: [],
    byOwner: new Map(),
    nextId: 0,
    closed: false,
    // One pump per check phase, however many runs ended in the poll phase before it.
    freed: () => {
      if (pumpQueued) return;
      pumpQueued = true;
      setImmediate(() => {
        pumpQueued = false;
        pump(state);
      });
    },
  };
  const stopWatchdog = watchInlineRuns(state);
  // esbuild's service (a process) starts now rather than inside the first program's request:
  // spawning it holds the event loop for ~10-80 ms, and every request waits behind that.
  if (config.prewarm > 0) void compileProgram('return');

  return {
    run: (request) => admitRun(state, request),
    limits: config.defaults,
    workerPids: () => state.supervisor.handles().map((h) => h.pid),
    readyWorkers: () => state.supervisor.handles().filter((h) => h.ready && !h.retiring).length,
    async close() {
      state.closed = true;
      stopWatchdog();
      for (const run of [...state.runs.values()])
        finishRun(state, run, failed('aborted', 'the isolate host is shutting down'));
      await state.supervisor.close();
    },
  };
}

function onWorkerMessage(state: HostState, handle: WorkerHandle, message: WorkerToHost): void {
  if (message.t === 'alive') {
    handle.aliveAt = performance.now();
    return;
  }
  if (message.t === 'bloated') {
    handle.retiring = true;
    if (handle.runs.size === 0) state.supervisor.send(handle, { t: 'shutdown' });
    return;
  }
  if (message.t === 'pool') {
    handle.slots = Number.isSafeInteger(message.ready) ? Math.max(0, message.ready) : 0;
    const warming = message.warming === true;
    if (warming && !handle.warming) handle.warmingSince = performance.now();
    handle.warming = warming;
    return;
  }
  const run = typeof message.t === 'string' && 'id' in message ? state.runs.get(message.id) : undefined;
  if (!run || run.worker !== handle) return;
  if (message.t === 'released') {
    if (handle.inlineRun === run.id) handle.inlineRun = undefined;
    pump(state);
  } else if (message.t === 'done') {
    // What an isolate that ran out of memory grew may stay in the worker's resident set, where
    // the memory governor would charge it to the next runs (another tenant's): the worker retires.
    if (!message.outcome.ok && message.outcome.kind === 'memory') handle.retiring = true;
    finishRun(state, run, settledOf(message.outcome, run.map));
  } else if (message.t === 'call') onProgramCall(state, run, handle, message);
}

/** A worker died: the runs it had are lost (crash); the supervisor starts another. */
function onWorkerExit(state: HostState, handle: WorkerHandle, description: string): void {
  for (const id of [...handle.runs]) {
    const run = state.runs.get(id);
    if (run)
      finishRun(state, run, failed('crash', `the isolate worker stopped (${description}); the run was lost`));
  }
  handle.runs.clear();
  handle.reservedMb = 0;
}
