// Log retention over a large log (issue 34), `node bench/retention.ts` (BENCH_EVENTS=1000000 by
// default; BENCH_SLICE=500 events per slice). A libsql store on a file, one tenant, 100 sessions;
// half the events appended "40 days ago", half now, 1 in 100 with a large value (a payload, half of
// them shared); the tenant keeps 30 days. Then one retention pass (host/tenants/retention.ts) and
// its figures: time per slice (p50, p99, max), the main thread's event-loop delay during the pass
// (perf_hooks histogram) against the same measure over an idle stretch of the same length in the
// same run (the baseline), and the file's size before, after the pass and after giving the free
// pages back (incremental_vacuum; the WAL checkpointed each time so the file size is the data's).
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { openStore } from '../host/store/index.ts';
import { createLogRetention } from '../host/tenants/retention.ts';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const SLICE = Number(process.env.BENCH_SLICE ?? 100);
const SESSIONS = 100;
const BATCH = 2000;
const DAY = 86_400_000;
const MiB = 1024 * 1024;

const dir = mkdtempSync(join(tmpdir(), 'dsh-bench-retention-'));
const path = join(dir, 'store.db');
let clock = Date.now() - 40 * DAY;
const store = openStore({ path, now: () => clock });
const db = (store as unknown as { db: { exec(sql: string): void; pragma(s: string, o?: object): unknown } })
  .db;
const fileBytes = () => {
  db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  return statSync(path).size;
};
const ms = (n: number) => `${n.toFixed(2)} ms`;
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

try {
  const tenant = await store.tenants.createTenant('bench');
  const sessions: string[] = [];
  for (let i = 0; i < SESSIONS; i++)
    sessions.push(
      (await store.agents.create({ tenantId: tenant.id, preset: 'standard', mode: 'direct', config: {} })).id,
    );
  const filled = performance.now();
  for (let n = 0; n < EVENTS; n += BATCH) {
    if (n >= EVENTS / 2) clock = Date.now();
    const batch = [];
    for (let i = n; i < Math.min(EVENTS, n + BATCH); i++) {
      const large = i % 100 === 0 ? `${i % 200 === 0 ? 'shared' : i}:`.padEnd(24 * 1024, 'x') : undefined;
      batch.push({
        sessionId: sessions[i % SESSIONS]!,
        type: i % 2 === 0 ? 'tool.call' : 'tool.result',
        surface: 'log-only' as const,
        callId: `c${i >> 1}`,
        data: {
          name: 'exec',
          arguments: { command: `echo event ${i} of the retention bench` },
          ...(large === undefined ? {} : { large }),
        },
      });
    }
    await store.events.append(batch);
    await store.events.flush();
  }
  const fillMs = performance.now() - filled;
  const before = fileBytes();
  const usageBefore = (await store.logRetention.tenants())[0]!.bytes;
  console.log(
    `log: ${EVENTS} events in ${SESSIONS} sessions, ${(usageBefore / MiB).toFixed(1)} MiB counted, file ${(before / MiB).toFixed(1)} MiB (filled in ${(fillMs / 1000).toFixed(1)} s)`,
  );
  await store.tenantSettings.put(tenant.id, { log: { retentionDays: 30 } });

  const slices: number[] = [];
  const retention = createLogRetention({
    store: store.logRetention,
    settings: {
      get: async () => ({ log: { retentionDays: 30, retentionBytes: 0, deletedAgentHours: 168 } }),
    },
    events: store.events,
    maxDays: 0,
    sliceRows: SLICE,
    // The pass measures removal; pages are given back below, on their own.
    compactPages: 0,
    onSlice: (_tenant, _slice, took) => slices.push(took),
  });
  const lag = monitorEventLoopDelay({ resolution: 1 });
  lag.enable();
  const started = performance.now();
  const pass = await retention.run();
  const passMs = performance.now() - started;
  lag.disable();

  // Baseline: the same measure over an idle stretch as long as the pass, in this process.
  const idle = monitorEventLoopDelay({ resolution: 1 });
  idle.enable();
  await sleep(Math.min(passMs, 30_000));
  idle.disable();

  const afterPass = fileBytes();
  const compactStarted = performance.now();
  let pages = 0;
  let steps = 0;
  const stepMs: number[] = [];
  for (;;) {
    const t = performance.now();
    const { freed, left } = await store.logRetention.compact(512);
    stepMs.push(performance.now() - t);
    pages += freed;
    steps++;
    if (freed === 0 || left === 0) break;
  }
  const compactMs = performance.now() - compactStarted;
  const after = fileBytes();

  const sorted = slices.sort((a, b) => a - b);
  const nsToMs = (ns: number) => ns / 1e6;
  console.log(
    `pass: ${pass.events} events and ${pass.payloads} payloads removed (${(pass.bytes / MiB).toFixed(1)} MiB) in ${pass.slices} slices of ${SLICE}, ${(passMs / 1000).toFixed(2)} s (${Math.round(pass.events / (passMs / 1000))} events/s)`,
  );
  console.log(
    `slice: p50 ${ms(pct(sorted, 0.5))}, p99 ${ms(pct(sorted, 0.99))}, max ${ms(sorted.at(-1) ?? 0)}`,
  );
  console.log(
    `event-loop delay during the pass: p50 ${ms(nsToMs(lag.percentile(50)))}, p99 ${ms(nsToMs(lag.percentile(99)))}, max ${ms(nsToMs(lag.max))}; idle baseline: p50 ${ms(nsToMs(idle.percentile(50)))}, p99 ${ms(nsToMs(idle.percentile(99)))}, max ${ms(nsToMs(idle.max))}`,
  );
  console.log(
    `space: file ${(before / MiB).toFixed(1)} MiB → ${(afterPass / MiB).toFixed(1)} MiB after the pass (free pages kept) → ${(after / MiB).toFixed(1)} MiB after incremental_vacuum (${pages} pages in ${steps} steps of ≤512, ${(compactMs / 1000).toFixed(2)} s, longest step ${ms(Math.max(...stepMs))}); ${((1 - after / before) * 100).toFixed(0)}% given back`,
  );
  console.log(
    `kept: ${(await store.logRetention.tenants())[0]?.bytes ?? 0} bytes counted; session 0 starts at seq ${await store.events.firstSeq?.(sessions[0]!)}`,
  );
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
