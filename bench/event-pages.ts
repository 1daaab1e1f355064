// Cost of one events page over a log of large calls (issue 11: a 382 MiB page took 10 s), and of
// storing them, `node bench/event-pages.ts`. Baseline in the same run: the page shape the API
// served before (every value inline, bounded only by count: `payloads: 'inline'`), against the
// page it serves now (`payloads: 'refs'`, bounded at 1 MiB). Also the bytes stored for 1000 calls
// that repeat one 1 MiB argument.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../host/store/db.ts';
import { createLibsqlEventLog } from '../host/store/event-log.ts';
import { migrate } from '../host/store/migrations.ts';
import type { EventQuery } from '../host/store/types.ts';

const MiB = 1024 * 1024;
const CALLS = 200;
const dir = mkdtempSync(join(tmpdir(), 'dsh-bench-pages-'));
try {
  const db = openDatabase({ path: join(dir, 'pages.db') });
  migrate(db);
  const log = createLibsqlEventLog(db);
  for (let i = 0; i < CALLS; i++) {
    const content = `${i}:`.padEnd(MiB, 'x'); // distinct values: nothing to deduplicate
    void log.append([
      {
        sessionId: 's',
        type: 'tool.call',
        surface: 'log-only',
        callId: `c${i}`,
        data: { name: 'write', arguments: { file_path: `f${i}`, content } },
      },
    ]);
    if (i % 20 === 0) await log.flush();
  }
  await log.flush();

  const page = async (query: EventQuery) => {
    const rss = process.memoryUsage().rss;
    const start = performance.now();
    const events = await log.list('s', { limit: 500, ...query });
    const bytes = JSON.stringify({ events }).length;
    const ms = performance.now() - start;
    return { ms, bytes, events: events.length, rssMiB: (process.memoryUsage().rss - rss) / MiB };
  };
  const show = (label: string, r: Awaited<ReturnType<typeof page>>) =>
    console.log(
      `${label.padEnd(44)} ${r.ms.toFixed(1).padStart(8)} ms  ${(r.bytes / MiB).toFixed(2).padStart(8)} MiB  ` +
        `${String(r.events).padStart(4)} events  rss +${r.rssMiB.toFixed(0)} MiB`,
    );
  console.log(`one page over ${CALLS} calls with distinct 1 MiB arguments (libsql):`);
  // The bounded page first (median of 5), so the large one's garbage does not land on it.
  const runs: Awaited<ReturnType<typeof page>>[] = [];
  for (let i = 0; i < 5; i++) runs.push(await page({ payloads: 'refs', maxBytes: MiB }));
  runs.sort((a, b) => a.ms - b.ms);
  const after = runs[2]!;
  const before = await page({ payloads: 'inline' });
  show('before: values inline, bounded by count', before);
  show('now: values by reference, bounded at 1 MiB', after);
  console.log(
    `page time ratio ${(before.ms / after.ms).toFixed(0)}x, page size ratio ${(before.bytes / after.bytes).toFixed(0)}x`,
  );
  log.close();
  db.close();

  const repeatDb = openDatabase({ path: join(dir, 'repeat.db') });
  migrate(repeatDb);
  const repeat = createLibsqlEventLog(repeatDb);
  const big = 'y'.repeat(MiB);
  const start = performance.now();
  for (let i = 0; i < 1000; i++) {
    void repeat.append([
      {
        sessionId: 's',
        type: 'tool.call',
        surface: 'log-only',
        callId: `c${i}`,
        data: { name: 'write', arguments: { file_path: 'f', content: big } },
      },
    ]);
    if (i % 50 === 0) await repeat.flush();
  }
  repeat.close();
  repeatDb.pragma('wal_checkpoint(TRUNCATE)');
  const ms = (performance.now() - start) / 1000;
  console.log(
    `1000 calls repeating one 1 MiB argument: ${(statSync(join(dir, 'repeat.db')).size / MiB).toFixed(1)} MiB on disk ` +
      `(${ms.toFixed(1)} ms per call to log; ~1000 MiB before)`,
  );
  repeatDb.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
