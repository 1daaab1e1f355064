// What sandboxd's file operations pay for Node's thread pool (issue 33): the system calls of one
// 1 KiB read as sandboxd makes them (readlink of the final name, open O_NOFOLLOW|O_NONBLOCK
// through /proc/self/fd/<root>, fstat, read, close), once through fs.promises (each call a round
// trip to a pool thread: two thread wake-ups) and once synchronous (what sandboxd does since
// 2026-12-06 for pieces up to 1 MiB), alternated in one run, back to back and one every 2 ms (a
// request at a time, as a client's calls come: the thread wakes cold each time). Prints p50/p90
// wall and this process's CPU per read, and the ratio sync / pool.
// Then the final name's symlink check: readlink (a plain file fails with EINVAL, an exception built
// each read) against an lstat that answers without one (what sandboxd does since 2026-12-07).
// Run: node bench/sandboxd-fs.ts [runs]   (default 400 per round, 2 rounds of each).
// Over HTTP the same change is seen as the container's CPU per read (bench/http-latency.ts).
import {
  closeSync,
  constants,
  promises as fsp,
  fstatSync,
  lstatSync,
  mkdtempSync,
  openSync,
  readlinkSync,
  readSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const RUNS = Number(process.argv[2] ?? 400);
const O_PATH = 0o10000000;
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

const dir = mkdtempSync(join(tmpdir(), 'sandboxd-fs-'));
writeFileSync(join(dir, 'a.txt'), Buffer.alloc(1024, 'x'));
const root = openSync(dir, O_PATH | constants.O_DIRECTORY);
const path = `/proc/self/fd/${root}/a.txt`;

const notLink = (e: unknown) => {
  if ((e as NodeJS.ErrnoException).code !== 'EINVAL') throw e;
};

const pooled = async (): Promise<void> => {
  await fsp.readlink(path).catch(notLink);
  const fh = await fsp.open(path, READ_FLAGS);
  const st = await fh.stat();
  await fh.read(Buffer.alloc(st.size), 0, st.size, 0);
  await fh.close();
};

const readSmall = (): void => {
  const fd = openSync(path, READ_FLAGS);
  const st = fstatSync(fd);
  readSync(fd, Buffer.alloc(st.size), 0, st.size, 0);
  closeSync(fd);
};

const sync = async (): Promise<void> => {
  try {
    readlinkSync(path);
  } catch (e) {
    notLink(e);
  }
  readSmall();
};

const lstat = async (): Promise<void> => {
  if (lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink()) readlinkSync(path);
  readSmall();
};

const round = async (fn: () => Promise<void>, gapMs: number) => {
  const wall: number[] = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < RUNS; i++) {
    if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
    const t = performance.now();
    await fn();
    wall.push((performance.now() - t) * 1000);
  }
  const cpu = process.cpuUsage(cpu0);
  wall.sort((a, b) => a - b);
  return {
    p50: wall[Math.floor(RUNS / 2)] as number,
    p90: wall[Math.floor(RUNS * 0.9)] as number,
    cpu: (cpu.user + cpu.system) / RUNS,
  };
};

console.log(`sandboxd-fs: one 1 KiB read's system calls, ${RUNS} runs a round, µs`);
console.log('pace | how | p50 | p90 | CPU a read (this process, all threads)');
console.log('(sync: readlink of the final name first; lstat: an lstat instead)');
for (const gapMs of [0, 2]) {
  const p50s = { pooled: [] as number[], sync: [] as number[], lstat: [] as number[] };
  const cpus = { pooled: [] as number[], sync: [] as number[], lstat: [] as number[] };
  for (const [name, fn] of [
    ['pooled', pooled],
    ['sync', sync],
    ['lstat', lstat],
    ['pooled', pooled],
    ['sync', sync],
    ['lstat', lstat],
  ] as const) {
    const r = await round(fn, gapMs);
    p50s[name].push(r.p50);
    cpus[name].push(r.cpu);
    const pace = gapMs === 0 ? 'back to back' : `one every ${gapMs} ms`;
    console.log(`${pace} | ${name} | ${r.p50.toFixed(1)} | ${r.p90.toFixed(1)} | ${r.cpu.toFixed(1)}`);
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  console.log(`  p50 sync / pooled: ×${(mean(p50s.sync) / mean(p50s.pooled)).toFixed(2)}`);
  console.log(
    `  lstat / readlink (sync): p50 ×${(mean(p50s.lstat) / mean(p50s.sync)).toFixed(2)}, CPU ×${(mean(cpus.lstat) / mean(cpus.sync)).toFixed(2)}`,
  );
}
closeSync(root);
rmSync(dir, { recursive: true, force: true });
