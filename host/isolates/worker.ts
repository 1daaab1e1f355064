// Entry point of an isolate worker process (forked by supervisor.ts with --no-node-snapshot and a
// heap cap). It owns a small pool of pre-warmed isolate slots and the runs in flight, and speaks the
// protocol.ts messages over the IPC channel. Invariants: a slot is used by one run and then disposed;
// the pool only ever holds slots no program has touched; losing the parent ends this process (with a
// SIGKILL fallback, because a disposed isolate can hang process.exit).

import type { HostToWorker, WorkerOutcome, WorkerToHost } from './protocol.ts';
import { isMessage } from './protocol.ts';
import type { ActiveRun, Slot } from './worker-run.ts';
import { createSlot, startRun } from './worker-run.ts';

interface WorkerArgs {
  prewarm: number;
  memoryMb: number;
}

const args: WorkerArgs = { prewarm: 2, memoryMb: 64, ...JSON.parse(process.argv[2] ?? '{}') };
const runs = new Map<number, ActiveRun>();
const pool: Slot[] = [];
let warming = 0;

const send = (message: WorkerToHost): void => {
  try {
    process.send?.(message);
  } catch {
    // channel gone: the disconnect handler ends the process
  }
};

const refill = (): void => {
  while (pool.length + warming < args.prewarm) {
    warming++;
    createSlot(args.memoryMb)
      .then((slot) => void pool.push(slot))
      .catch((error: unknown) => process.stderr.write(`prewarm failed: ${String(error)}\n`))
      .finally(() => void warming--);
  }
};

const takeSlot = async (memoryMb: number): Promise<Slot> => {
  const index = pool.findIndex((slot) => slot.memoryMb === memoryMb);
  const slot = index >= 0 ? pool.splice(index, 1)[0] : undefined;
  setImmediate(refill);
  return slot ?? createSlot(memoryMb);
};

const onRun = async (msg: Extract<HostToWorker, { t: 'run' }>): Promise<void> => {
  const done = (outcome: WorkerOutcome) => {
    runs.delete(msg.id);
    send({ t: 'done', id: msg.id, outcome });
  };
  let slot: Slot;
  try {
    slot = await takeSlot(msg.limits.memoryMb);
  } catch (error) {
    return done({
      ok: false,
      kind: 'crash',
      message: `could not create an isolate: ${String(error).slice(0, 200)}`,
      logs: [],
    });
  }
  runs.set(msg.id, startRun(slot, msg, done));
};

// A graceful exit can hang inside a disposed isolate; the supervisor kills us after its grace period.
const exit = (code: number): void => {
  for (const run of runs.values()) run.cancel();
  for (const slot of pool.splice(0)) if (!slot.isolate.isDisposed) slot.isolate.dispose();
  process.exit(code);
};

process.on('message', (raw: unknown) => {
  if (!isMessage(raw)) return;
  const msg = raw as HostToWorker;
  switch (msg.t) {
    case 'run':
      void onRun(msg);
      break;
    case 'result':
      runs.get(msg.id)?.deliver(msg.callId, msg.envelope);
      break;
    case 'cancel':
      runs.get(msg.id)?.cancel();
      break;
    case 'shutdown':
      exit(0);
      break;
  }
});
// The parent is gone: nobody would kill us after a hang, so end without the graceful path.
process.on('disconnect', () => process.kill(process.pid, 'SIGKILL'));
// Stray rejections from isolates disposed mid-operation are expected; they must not end the worker.
process.on('unhandledRejection', (reason) =>
  process.stderr.write(`unhandled rejection: ${String(reason).slice(0, 300)}\n`),
);

setInterval(() => {
  for (const run of runs.values()) run.check();
}, 20).unref();

refill();
send({ t: 'ready', pid: process.pid });
