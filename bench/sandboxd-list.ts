// What sandboxd's `list` costs on a directory of 10,000 entries (9,000 files of varied sizes, 900
// directories, 100 symlinks): sandboxd run as a local child process over its stdio (as the unit
// tests' harness runs it: tests/unit/sandboxd/harness.ts), the host's client (the same one the
// docker provider uses) calling `list` one call at a time. Prints p50/p90 wall per call as the
// client sees it, and the sandboxd process's CPU per call (every thread of it, the thread pool's
// included: the sum of /proc/<pid>/task/*/schedstat), and checks that the answers are identical.
// BENCH_BASE=<git ref> adds a second sandboxd, that commit's sandbox-image/ and sandbox-wire/
// (git archive into a temporary folder), over the same directory; the calls alternate between the
// two (which goes first alternates too), so both see the same machine in one sitting.
// Run: BENCH_BASE=main node --no-node-snapshot bench/sandboxd-list.ts [runs]   (default 30)
import { execFileSync, spawn } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { connectSandboxd, type SandboxdClient } from '../host/sandbox/sandboxd/client.ts';

const RUNS = Number(process.argv[2] ?? 30);
const BASE = process.env.BENCH_BASE;
const REPO = join(import.meta.dirname, '..');
const tmp = mkdtempSync(join(tmpdir(), 'sandboxd-list-'));
const root = join(tmp, 'ws');
const dir = join(root, 'entries');
mkdirSync(dir, { recursive: true });
for (let i = 0; i < 9000; i++) writeFileSync(join(dir, `file-${i}.txt`), 'x'.repeat(i % 97));
for (let i = 0; i < 900; i++) mkdirSync(join(dir, `dir-${i}`));
for (let i = 0; i < 100; i++) symlinkSync(`file-${i}.txt`, join(dir, `link-${i}`));

/** That commit's sandboxd (with the wire it imports), in a folder of its own. */
const checkout = (ref: string): string => {
  const at = join(tmp, 'base');
  mkdirSync(at);
  const tar = execFileSync('git', ['-C', REPO, 'archive', ref, 'sandbox-image/sandboxd', 'sandbox-wire'], {
    maxBuffer: 64 * 1024 * 1024,
  });
  execFileSync('tar', ['-x', '-C', at], { input: tar });
  return join(at, 'sandbox-image', 'sandboxd', 'main.ts');
};

interface Variant {
  name: string;
  pid: number;
  client: SandboxdClient;
  stop(): void;
  wall: number[];
  cpu: number[];
}

const start = async (name: string, main: string): Promise<Variant> => {
  const child = spawn(process.execPath, ['--no-warnings', main], {
    env: {
      ...process.env,
      SANDBOXD_ROOT: root,
      SANDBOXD_STATE: join(tmp, `state-${name}`),
      SANDBOXD_EXIT_ON_EOF: '1',
    },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const client = await connectSandboxd({
    input: child.stdout,
    output: child.stdin,
    root,
    timeoutMs: 60_000,
  });
  return {
    name,
    pid: child.pid as number,
    client,
    stop: () => {
      client.close();
      child.stdin.end();
    },
    wall: [],
    cpu: [],
  };
};

/** CPU ns the process has used, all its threads (the thread pool's too). */
const cpuNs = (pid: number): number => {
  let sum = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      sum += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // A thread that ended meanwhile.
    }
  }
  return sum;
};

const once = async (v: Variant) => {
  const cpu = cpuNs(v.pid);
  const t = performance.now();
  const entries = await v.client.fs.list('entries');
  v.wall.push(performance.now() - t);
  v.cpu.push((cpuNs(v.pid) - cpu) / 1e6);
  return entries;
};

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
};

const variants = [await start('this', join(REPO, 'sandbox-image', 'sandboxd', 'main.ts'))];
if (BASE !== undefined) variants.push(await start(`base ${BASE}`, checkout(BASE)));
try {
  // Warm-up (and the answers compared): the first call of each.
  const answers = await Promise.all(variants.map((v) => v.client.fs.list('entries')));
  if (answers[0]?.length !== 10_000) throw new Error(`expected 10000 entries, got ${answers[0]?.length}`);
  // BENCH_DIFFERENT=1: a variant that answers otherwise on purpose (what a part costs, left out).
  if (answers.length > 1 && !isDeepStrictEqual(answers[0], answers[1]) && process.env.BENCH_DIFFERENT !== '1')
    throw new Error('the two sandboxd answer different listings');
  for (let r = 0; r < RUNS; r++) {
    const order = r % 2 === 0 ? variants : [...variants].reverse();
    for (const v of order) await once(v);
  }
  console.log(`list of 10,000 entries, ${RUNS} calls each, alternated`);
  console.log('variant                 wall p50   wall p90   sandboxd CPU p50   CPU p90 (ms per call)');
  for (const v of variants)
    console.log(
      `${v.name.padEnd(22)} ${pct(v.wall, 50).toFixed(1).padStart(8)} ${pct(v.wall, 90).toFixed(1).padStart(10)} ${pct(v.cpu, 50).toFixed(1).padStart(18)} ${pct(v.cpu, 90).toFixed(1).padStart(9)}`,
    );
} finally {
  for (const v of variants) v.stop();
  rmSync(tmp, { recursive: true, force: true });
}
