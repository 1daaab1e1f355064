// Cost of durable event logging per tool call (a tool.call + tool.result pair), `node bench/store-log.ts`.
// Part 1, the target of issue 18: what the log adds to a 1,000-call concurrency-safe batch run
// through the tool pipeline, against the same batch with no log in the same run: the batch's
// answer, the control plane's main-thread CPU for the batch and its log write (what every other
// request waits behind), and the time until the batch's events are durable. Before: the libsql
// transaction on the main thread (`inline`); after: on the writer thread (store/event-writer.ts).
// Part 2 compares the libsql EventLog (WAL file, synchronous NORMAL, one transaction per tick)
// with a bare array push and with the in-memory EventLog, in three shapes: a burst (everything in
// one tick, the best case for batching), one call per tick (the worst case: a 2-event transaction
// per tick), and 32 concurrent calls per tick. `unbatched` forces a flush (one transaction) per
// appended event.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as tick } from 'node:timers/promises';
import { openDatabase } from '../host/store/db.ts';
import { createLibsqlEventLog } from '../host/store/event-log.ts';
import type { ClosableEventLog } from '../host/store/event-log-port.ts';
import { createMemoryEventLog } from '../host/store/memory.ts';
import { migrate } from '../host/store/migrations.ts';
import type { EventLog, SessionEventInput } from '../host/store/types.ts';
import { BATCH, type BatchFigures, batchRun, GROUPS, PER_GROUP } from './lib/batch-run.ts';

const RESULT_TEXT = `total 48\n${'drwxr-xr-x 2 agent agent 4096 Dec  2 10:40 src\n'.repeat(10)}`;
const call = (sessionId: string, i: number): SessionEventInput => ({
  sessionId,
  type: 'tool.call',
  surface: 'current',
  callId: `call_${i}`,
  data: { name: 'bash', arguments: { command: 'ls -la /workspace' } },
});
const result = (sessionId: string, i: number): SessionEventInput => ({
  sessionId,
  type: 'tool.result',
  surface: 'current',
  callId: `call_${i}`,
  data: { ok: true, content: [{ type: 'text', text: RESULT_TEXT }] },
});

interface Sink {
  append(events: SessionEventInput[]): unknown;
  flush(): Promise<void>;
}

const arraySink = (): Sink => {
  const rows: unknown[] = [];
  let seq = 0;
  return {
    append: (events) => {
      for (const e of events) rows.push({ ...e, seq: ++seq, at: Date.now() });
    },
    flush: async () => {},
  };
};

type Shape = 'burst' | 'per-tick' | 'concurrent-32' | 'unbatched';

/** Runs `pairs` call+result pairs and returns wall-clock µs per pair (including the final flush). */
const run = async (sink: Sink, shape: Shape, pairs: number): Promise<number> => {
  const start = performance.now();
  if (shape === 'burst') {
    for (let i = 0; i < pairs; i++) {
      sink.append([call('s', i)]);
      sink.append([result('s', i)]);
    }
  } else if (shape === 'per-tick') {
    for (let i = 0; i < pairs; i++) {
      sink.append([call('s', i)]);
      await tick();
      sink.append([result('s', i)]);
    }
  } else if (shape === 'concurrent-32') {
    for (let i = 0; i < pairs; i += 32) {
      const width = Math.min(32, pairs - i);
      for (let j = 0; j < width; j++) sink.append([call(`s${j}`, i + j)]);
      await tick();
      for (let j = 0; j < width; j++) sink.append([result(`s${j}`, i + j)]);
      await tick();
    }
  } else {
    for (let i = 0; i < pairs; i++) {
      sink.append([call('s', i)]);
      await sink.flush();
      sink.append([result('s', i)]);
      await sink.flush();
    }
  }
  await sink.flush();
  return ((performance.now() - start) * 1000) / pairs;
};

const dir = mkdtempSync(join(tmpdir(), 'dsh-bench-store-'));
const opened: { log: ClosableEventLog; close(): void }[] = [];
const libsqlSink = (batchWindowMs = 0, thread = false): Sink & EventLog => {
  const path = join(dir, `bench-${opened.length}.db`);
  const db = openDatabase({ path });
  migrate(db);
  const log = createLibsqlEventLog(db, { batchWindowMs, ...(thread ? { writerPath: path } : {}) });
  const close = () => {
    log.close();
    db.close();
  };
  opened.push({ log, close });
  return log;
};
const memorySink = (): Sink & EventLog => {
  const log = createMemoryEventLog();
  opened.push({ log, close: () => log.close() });
  return log;
};

const SIZES: Record<Shape, number> = {
  burst: 20_000,
  'per-tick': 5_000,
  'concurrent-32': 20_000,
  unbatched: 2_000,
};
const fmt = (n: number) => n.toFixed(2).padStart(9);

// Part 1: a 1,000-call batch through the pipeline.
try {
  console.log(
    `store-log bench: node ${process.version}, payload ≈ ${JSON.stringify(result('s', 0)).length} B result`,
  );
  console.log(
    `\n${BATCH}-call batch through the pipeline (medians of ${GROUPS} groups of ${PER_GROUP}; main-thread CPU is what other requests wait behind)`,
  );
  console.log('log                          answer ms   main-thread CPU ms  (added)   until durable ms');
  const none = await batchRun(undefined);
  const variants: [string, BatchFigures][] = [
    ['none (baseline)', none],
    ['in-memory log', await batchRun(memorySink())],
    ['libsql, inline (before)', await batchRun(libsqlSink(2))],
    ['libsql, writer thread (now)', await batchRun(libsqlSink(2, true))],
  ];
  for (const [name, f] of variants) {
    console.log(
      `${name.padEnd(28)} ${f.answerMs.toFixed(2).padStart(9)}   ${f.cpuMs.toFixed(2).padStart(15)}  ${`+${(f.cpuMs - none.cpuMs).toFixed(2)}`.padStart(8)}   ${f.durableMs.toFixed(2).padStart(14)}`,
    );
  }
  console.log('\nper call, appended directly (no pipeline):');
  console.log(
    'shape           pairs   array µs/pair  memory µs/pair  libsql µs/pair  (÷array)  events/s  libsql+2ms window  (÷array)  events/s  thread+2ms window  (÷array)  events/s',
  );
  // BENCH_SHAPES=0 prints part 1 only.
  for (const shape of process.env.BENCH_SHAPES === '0' ? [] : (Object.keys(SIZES) as Shape[])) {
    const pairs = SIZES[shape];
    await run(libsqlSink(), shape, Math.min(pairs, 500)); // warm up statements and JIT
    const array = await run(arraySink(), shape, pairs);
    const memory = await run(memorySink(), shape, pairs);
    const libsql = await run(libsqlSink(), shape, pairs);
    const windowed = await run(libsqlSink(2), shape, pairs);
    const threaded = await run(libsqlSink(2, true), shape, pairs);
    const cells = [libsql, windowed, threaded].map(
      (us) =>
        `${fmt(us)}  ${(us / array).toFixed(1).padStart(7)}x  ${String(Math.round(2e6 / us)).padStart(8)}`,
    );
    console.log(
      `${shape.padEnd(14)} ${String(pairs).padStart(6)} ${fmt(array)}      ${fmt(memory)}       ${cells.join('       ')}`,
    );
  }
  console.log('µs/pair is wall time per tool call (call + result event) including the final flush;');
  console.log(
    'libsql minus array is what durable logging adds to one call. unbatched = one transaction per event.',
  );
} finally {
  for (const o of opened) o.close();
  rmSync(dir, { recursive: true, force: true });
}
