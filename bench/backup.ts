// Backup and restore of the libsql store, `node --no-node-snapshot bench/backup.ts [events]`: a store
// of N logged events (default 200,000, in 200 sessions, written through the store) backed up by
// the command line's `backup` in a process of its own while this process keeps logging tool
// calls, against the same logging with no backup in the same run: the backup's time and size, the
// restore's time, and what the backup costs the service: the time until a logged call is durable
// (median and p99) and the event loop's worst lag, each as a ratio to the baseline.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { restoreLibsql } from '../host/store/backup.ts';
import { openStore } from '../host/store/index.ts';
import type { SessionEventInput } from '../host/store/types.ts';

const EVENTS = Number(process.argv[2] ?? 200_000);
const SESSIONS = 200;
const CLI = fileURLToPath(new URL('../host/cli.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'dsh-bench-backup-'));
const data = join(dir, 'data');

const pair = (sessionId: string, i: number): SessionEventInput[] => [
  {
    sessionId,
    type: 'tool.call',
    surface: 'current',
    callId: `c${i}`,
    data: { name: 'bash', arguments: { command: `ls -la /workspace/src/${i}` } },
  },
  {
    sessionId,
    type: 'tool.result',
    surface: 'current',
    callId: `c${i}`,
    data: { ok: true, text: `total 48\n${'drwxr-xr-x 2 agent agent 4096 Dec  2 10:40 src\n'.repeat(8)}` },
  },
];

const store = openStore({ path: join(data, 'store.db') });
const percentile = (xs: number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? 0;

/** Logs one call pair at a time until `done()`, each awaited until durable; its latencies and the loop's worst lag. */
const logWhile = async (done: () => boolean, minCalls: number) => {
  const lag = monitorEventLoopDelay({ resolution: 5 });
  lag.enable();
  const times: number[] = [];
  for (let i = 0; !done() || times.length < minCalls; i++) {
    const start = performance.now();
    await store.events.append(pair('live', 1_000_000 + i));
    await store.events.flush();
    times.push(performance.now() - start);
  }
  lag.disable();
  return {
    p50: percentile(times, 0.5),
    p99: percentile(times, 0.99),
    calls: times.length,
    maxLagMs: lag.max / 1e6,
  };
};

try {
  let made = 0;
  while (made < EVENTS) {
    const batch: SessionEventInput[] = [];
    for (let i = 0; i < 1000 && made < EVENTS; i += 2, made += 2)
      batch.push(...pair(`s${made % SESSIONS}`, made));
    await store.events.append(batch);
  }
  await store.events.flush();

  const baseline = await logWhile(() => true, 300);
  const started = performance.now();
  let backupMs = 0;
  const backup = promisify(execFile)(
    process.execPath,
    ['--no-node-snapshot', CLI, 'backup', join(dir, 'store.backup')],
    {
      env: { PATH: process.env.PATH ?? '', DSH_DATA_DIR: data },
    },
  ).then(({ stdout }) => {
    backupMs = performance.now() - started;
    return JSON.parse(stdout) as { bytes: number };
  });
  let finished = false;
  void backup.finally(() => {
    finished = true;
  });
  const during = await logWhile(() => finished, 300);
  const { bytes } = await backup;
  const restoreStart = performance.now();
  restoreLibsql(join(dir, 'store.backup'), join(dir, 'restored', 'store.db'), undefined);
  const restoreMs = performance.now() - restoreStart;

  const fmt = (n: number) => n.toFixed(2);
  console.log(`store: ${EVENTS} events in ${SESSIONS} sessions; backup ${(bytes / 2 ** 20).toFixed(1)} MiB`);
  console.log(
    `backup (a process of its own, start included): ${fmt(backupMs)} ms; restore (checked, migrated): ${fmt(restoreMs)} ms`,
  );
  console.log('logging a call until durable   p50 ms   p99 ms   worst loop lag ms   calls');
  for (const [name, r] of [
    ['no backup', baseline],
    ['during the backup', during],
  ] as const)
    console.log(
      `${name.padEnd(30)} ${fmt(r.p50).padStart(6)} ${fmt(r.p99).padStart(8)} ${fmt(r.maxLagMs).padStart(19)} ${String(r.calls).padStart(7)}`,
    );
  console.log(
    `ratio during/without: p50 ${fmt(during.p50 / baseline.p50)}x, p99 ${fmt(during.p99 / baseline.p99)}x, loop lag ${fmt(during.maxLagMs / baseline.maxLagMs)}x`,
  );
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
