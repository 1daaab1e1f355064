// What checkpoint tracking costs the main thread per tracked write once an agent's index is full
// (issue 33): `node --no-node-snapshot bench/checkpoint-turns.ts [runs]`. One agent on the memory
// sandbox (no sandboxd: what is left is the tracker's own work), its checkpoints under a temporary
// directory at the default bounds (256 checkpoints, 64 MiB); 1,300 tracked writes of 1 KiB fill
// the index (256 entries, 1,000 dropped call ids, ~85 KB of JSON), then `runs` (300) more are
// timed, rewriting the same bytes (the pre-image is one the index names already) and new bytes
// each time. Prints wall time and the main thread's CPU (process.threadCpuUsage) per write. To
// compare two versions of the code, run it in each tree in turn.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCheckpointStore } from '../host/agents/checkpoints/store.ts';
import { createCheckpointTracker } from '../host/agents/checkpoints/tracker.ts';
import { createMemoryProvider } from '../host/sandbox/memory/provider.ts';

const RUNS = Number(process.argv[2] ?? 300);
const dir = mkdtempSync(join(tmpdir(), 'dsh-bench-ckpt-turns-'));
try {
  const tracker = createCheckpointTracker({
    store: createCheckpointStore(dir),
    boundsOf: async () => ({ maxBytes: 64 * 1024 * 1024, maxCount: 256 }),
  });
  const sandbox = await createMemoryProvider().create({ tenantId: 't', agentId: 'a1' });
  const kib = Buffer.alloc(1024, 'x');
  await sandbox.fs.writeFile('w.txt', kib);
  let n = 0;
  // Call ids as long as a model's (toolu_ and 24 characters): the dropped ids are most of the index.
  const write = (content: Buffer) =>
    tracker.track(
      't',
      'a1',
      sandbox,
      { callId: `toolu_01${String(++n).padStart(22, '0')}`, tool: 'write', paths: ['w.txt'] },
      () => sandbox.fs.writeFile('w.txt', content),
    );
  for (let i = 0; i < 1300; i++) await write(kib);
  const cases: Array<[string, () => Buffer]> = [
    ['the same bytes', () => kib],
    ['new bytes', () => Buffer.from(String(n).padEnd(1024, 'y'))],
  ];
  console.log(`checkpoint turns: ${RUNS} tracked writes of 1 KiB each, the index full`);
  for (const [label, content] of cases) {
    const cpu = process.threadCpuUsage();
    const started = performance.now();
    for (let i = 0; i < RUNS; i++) await write(content());
    const used = process.threadCpuUsage(cpu);
    const wall = (performance.now() - started) / RUNS;
    const main = (used.user + used.system) / RUNS / 1000;
    console.log(
      `${label}: ${wall.toFixed(2)} ms wall, ${main.toFixed(2)} ms of the main thread's CPU per write`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
