// Entry point of an isolate worker process (forked by supervisor.ts with --no-node-snapshot and a
// heap cap). It owns a small pool of pre-warmed isolate slots and the runs in flight, polls the CPU
// they really used (cpu.ts) and the process's memory (memory.ts), and speaks the protocol.ts messages over the IPC
// channel. Invariants: a slot is used by one run and then disposed;
// the pool only ever holds slots no program has touched; losing the parent ends this process (with a
// SIGKILL fallback, because a disposed isolate can hang process.exit).

import { createOutbox } from './outbox.ts';
import type { HostToWorker, WorkerOutcome, WorkerToHost } from './protocol.ts';
import { ALIVE_MS, isMessage, unbatch } from './protocol.ts';
import { startWorkerUpkeep } from './worker-kit.ts';
import type { ActiveRun, Slot } from './worker-run.ts';
import { createSlot, startRun } from './worker-run.ts';

interface WorkerArgs {
  prewarm: number;
  memoryMb: number;
  /** The most this process may hold (resident); its runs are ended before it gets there. */
  budgetMb: number;
}

const args: WorkerArgs = {
  prewarm: 2,
  memoryMb: 64,
  budgetMb: 870,
  ...JSON.parse(process.argv[2] ?? '{}'),
};
const runs = new Map<number, ActiveRun>();
const pool: Slot[] = [];
let warming = false;
/** Runs received and still waiting for their isolate (not yet in `runs`). */
let starting = 0;
/** Runs the host dedicated this worker to and then took the dedication back from (`release`). */
const released = new Set<number>();

const outbox = createOutbox<WorkerToHost>((frame) => {
  try {
    return process.send?.(frame) ?? false;
  } catch {
    return false; // channel gone: the disconnect handler ends the process
  }
});

// One slot at a time, each in its own macrotask: `new Isolate` blocks this thread for a few ms, and
// runs that arrive meanwhile (or calls of runs in flight) get the loop between two creations.
// Called at start and after a run has finished, never when a run starts: creation is paid before
// the next request arrives, not by the request that took the slot.
const refill = (): void => {
  if (warming || pool.length >= args.prewarm) return;
  warming = true;
  createSlot(args.memoryMb)
    .then((slot) => void pool.push(slot))
    .catch((error: unknown) => process.stderr.write(`prewarm failed: ${String(error)}\n`))
    .finally(() => {
      warming = false;
      const more = pool.length < args.prewarm;
      outbox.post({ t: 'pool', ready: pool.length, warming: more });
      if (more) setImmediate(refill);
    });
};

const takeSlot = async (memoryMb: number): Promise<Slot> => {
  const index = pool.findIndex((slot) => slot.memoryMb === memoryMb);
  const slot = index >= 0 ? pool.splice(index, 1)[0] : undefined;
  return slot ?? createSlot(memoryMb);
};

const onRun = async (msg: Extract<HostToWorker, { t: 'run' }>): Promise<void> => {
  const done = (outcome: WorkerOutcome) => {
    runs.delete(msg.id);
    released.delete(msg.id);
    // One frame (one write, one wake-up of the host): the pool state tells the host this worker is
    // about to be busy creating isolates, and the outcome.
    outbox.queue({ t: 'pool', ready: pool.length, warming: warming || pool.length < args.prewarm });
    outbox.send({ t: 'done', id: msg.id, outcome });
    // The run's isolate is disposed right after this returns; then the pool is topped up.
    setImmediate(refill);
  };
  let slot: Slot;
  starting++;
  try {
    slot = await takeSlot(msg.limits.memoryMb);
  } catch (error) {
    starting--;
    return done({
      ok: false,
      kind: 'crash',
      message: `could not create an isolate: ${String(error).slice(0, 200)}`,
      logs: [],
    });
  }
  starting--;
  // Inline only when the host dedicated this worker to the run, and while it is the worker's one
  // run (none other in flight or arriving): nothing else can be waiting for this thread. The host
  // takes the dedication back from a run that waits long on its tools and sends others here.
  const inline = msg.inline === true;
  const run = startRun(slot, msg, {
    call: outbox.post,
    done,
    inline: () => inline && !released.has(msg.id) && runs.size === 1 && starting === 0,
  });
  runs.set(msg.id, run);
  upkeep.wake();
  run.begin();
};

/** Results of one frame, grouped per run so that each run's isolate is entered once. */
const deliverAll = (results: Array<Extract<HostToWorker, { t: 'result' }>>): void => {
  const byRun = new Map<number, Array<[number, string]>>();
  for (const { id, callId, envelope } of results) {
    const list = byRun.get(id);
    if (list === undefined) byRun.set(id, [[callId, envelope]]);
    else list.push([callId, envelope]);
  }
  for (const [id, list] of byRun) runs.get(id)?.deliver(list);
};

// A graceful exit can hang inside a disposed isolate; the supervisor kills us after its grace period.
const exit = (code: number): void => {
  for (const run of runs.values()) run.cancel();
  for (const slot of pool.splice(0)) if (!slot.isolate.isDisposed) slot.isolate.dispose();
  process.exit(code);
};

process.on('message', (raw: unknown) => {
  if (!isMessage(raw)) return;
  const results: Array<Extract<HostToWorker, { t: 'result' }>> = [];
  for (const msg of unbatch(raw) as HostToWorker[]) {
    if (msg.t === 'result') {
      results.push(msg);
      continue;
    }
    if (results.length > 0) deliverAll(results.splice(0));
    switch (msg.t) {
      case 'run':
        void onRun(msg);
        break;
      case 'cancel':
        runs.get(msg.id)?.cancel();
        break;
      case 'release':
        if (runs.has(msg.id)) {
          released.add(msg.id);
          outbox.post({ t: 'released', id: msg.id });
        }
        break;
      case 'shutdown':
        exit(0);
        break;
    }
  }
  if (results.length > 0) deliverAll(results);
});
// Every poll: CPU as the process really used it on queued entries (cpu.ts; inline entries are
// measured around themselves, worker-run.ts), which ends runs past their budgets, then memory.
// With no run, every IDLE_POLL_MS only (an idle worker polled 50 times a second, ~10 ms of CPU a
// second at load); a run wakes it before its first entry.
const IDLE_POLL_MS = 200;
const upkeep = startWorkerUpkeep({
  budgetMb: args.budgetMb,
  pollMs: 20,
  idlePollMs: IDLE_POLL_MS,
  live: () => runs.values(),
  onBloated: () => outbox.send({ t: 'bloated' }),
});
// Inline entries hold this thread; the host kills a worker that goes quiet for longer than an
// entry may legitimately take (protocol.ts `alive`).
setInterval(() => {
  for (const run of runs.values()) if (run.inline) return void outbox.post({ t: 'alive' });
}, ALIVE_MS).unref();

outbox.send({ t: 'ready', pid: process.pid });
refill();
