// The latency a client sees over HTTP (issue 33): this process is the client, speaking HTTP/1.1
// with keep-alive (node:http, one socket, sequential calls) to a service started the way `npm start`
// starts it (`bash scripts/run.sh serve`, its own data directory, a loopback port), in a process
// of its own. For each row it prints p50/p90/p99 over BENCH_RUNS sequential calls, made in blocks of
// BENCH_BLOCK (10) calls of one row, the rows' blocks taking turns so a noisy minute hits them all
// alike, and the p50 of each block's first call (which follows another row's work: the docker CLI,
// an isolate made in this process) apart:
//   bash `true`, read 1 KiB, write 1 KiB, run_code `return 1` back to back, a program of 20
//   sequential tools.read, agent ready (create, then the first bash `true` done; the warm pool
//   refilled before each; with its parts, and the agent's second bash, and a third after 2 s idle, beside them), warm start (a stopped service started again until /v1/health answers,
//   through scripts/run.sh as `npm start` does, and `host/cli.ts serve` alone)
// two rows of the request path's depth without a tool (GET /v1/health, no key; GET /v1/agents/:id, its
// key checked and the agent looked up), for the main thread's CPU a call beside the floor server's,
// and, measured in the same run as baselines, `docker exec <the agent's container> true` through
// the Docker CLI and a bare isolated-vm isolate evaluating `1` in this process (new isolate, new
// context, eval, dispose), with each row's ratio to them and its target. Beside each call row, the
// CPU a call used (schedstat and the container's cpuacct, which hold up on a loaded machine where
// wall time does not): the service's main thread, all of its threads, the agent's container, and
// the run_code isolate workers (processes of their own, all their threads). And the floors under
// the sandbox rows, in the same rounds: a bare node:http server's answer (with and without a hop,
// lib/http-floor.ts), a read, `exec true` and 20 reads made directly over a sandboxd link in this
// process (lib/link-floor.ts: a sandbox of the same image, no service around it), and 20 round trips
// of a forked worker with its parent (lib/chain-floor.ts); at the end each sandbox row beside the sum
// of its floors' p50s (reportFloors).
// Run: npm run bench http-latency   (or node --no-node-snapshot bench/http-latency.ts; the image:
// DSH_SANDBOX_IMAGE, else the one setup builds). BENCH_RUNS (30), BENCH_BLOCK (10; 1 interleaves call by call),
// BENCH_WARMUP (200: the fewest unmeasured calls of each row first; more until V8's background
// threads settle, at most BENCH_WARMUP_MAX, 3000: see warmUp; 3 for the docker CLI), BENCH_READY_RUNS (10),
// BENCH_STARTS (3), BENCH_ONLY (row names' beginnings, comma-separated). DSH_* settings in the environment reach the service (e.g. DSH_POOL_SIZE).
// BENCH_UNTRACKED=1: the tenant's settings turn checkpoints off (checkpoints.maxCount 0), to see what tracking costs a write.
// BENCH_CPU_PROF=dir starts the service under `node --cpu-prof --cpu-prof-dir=dir` (the profile is
// written when it stops; BENCH_CPU_PROF_INTERVAL its sampling interval in µs, 1000 unless set). At the end it deletes its agents, stops the service and removes whatever
// is still labelled with its instance id (only its own containers and workspaces).
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Docker from 'dockerode';
import ivm from 'isolated-vm';
import { loadConfig } from '../host/config.ts';
import { createIdlePoll } from '../host/idle-poll.ts';
import { createLoopWorkspaces } from '../host/sandbox/docker/index.ts';
import { type ChainFloor, startChainFloor } from './lib/chain-floor.ts';
import { type FloorServer, startFloorServer } from './lib/http-floor.ts';
import { type LinkFloor, startLinkFloor } from './lib/link-floor.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 30);
const READY_RUNS = Number(process.env.BENCH_READY_RUNS ?? 10);
/** Sequential calls of one row before the next row's: a client's calls, one after another. */
const BLOCK = Math.max(1, Number(process.env.BENCH_BLOCK ?? 10));
/** Calls of each row made and not measured first (a service that has run a while). */
const WARMUP = Math.max(1, Number(process.env.BENCH_WARMUP ?? 200));
const WARMUP_MAX = Math.max(WARMUP, Number(process.env.BENCH_WARMUP_MAX ?? 3000));
/** V8's background threads' CPU over a warm-up chunk, as a share of the main thread's, that counts as settled. */
const SETTLED = 0.03;
const STARTS = Number(process.env.BENCH_STARTS ?? 3);
/** BENCH_ONLY=a,b: only the rows whose name starts with one of these (and the baselines). */
const ONLY = process.env.BENCH_ONLY?.split(',').filter(Boolean);
const wanted = (row: string): boolean =>
  ONLY === undefined ||
  row.startsWith('docker exec') ||
  row.startsWith('bare') ||
  row.startsWith('floor') ||
  row.startsWith('request path') ||
  ONLY.some((o) => row.startsWith(o));
const ROOT = join(import.meta.dirname, '..');
const METRICS_KEY = 'bench-metrics-key-0123456789abcdef';
const run = promisify(execFile);
const docker = new Docker();
const image =
  loadConfig().sandboxImage ?? (await (await import('../scripts/setup/image.ts')).ensureSandboxImage()).tag;

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
};
const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });

const dataDir = mkdtempSync(join(tmpdir(), 'dsh-bench-latency-'));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const config = loadConfig({ dataDir }, {});
const serviceEnv = {
  ...process.env,
  DSH_SANDBOX_IMAGE: image,
  DSH_DATA_DIR: dataDir,
  DSH_PORT: String(port),
  DSH_HOST: '127.0.0.1',
  DSH_METRICS_KEY: METRICS_KEY,
};
const profileArgs = process.env.BENCH_CPU_PROF
  ? [
      '--cpu-prof',
      `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`,
      `--cpu-prof-interval=${process.env.BENCH_CPU_PROF_INTERVAL ?? 1000}`,
    ]
  : [];

interface Service {
  child: ChildProcess;
  lines: string[];
  /** ms from spawn until /v1/health answered 200. */
  readyMs: number;
  /** CPU ms its processes (it and its descendants) had used by then: holds up on a loaded machine. */
  cpuMs: number;
}

/** utime + stime of `pid` and every descendant still running, in ms (USER_HZ 100). */
const treeCpuMs = (pid: number): number => {
  const stats = readdirSync('/proc').flatMap((entry) => {
    if (!/^\d+$/.test(entry)) return [];
    try {
      const fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      return [
        { pid: Number(entry), ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) },
      ];
    } catch {
      return [];
    }
  });
  const tree = new Set([pid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const s of stats)
      if (tree.has(s.ppid) && !tree.has(s.pid)) {
        tree.add(s.pid);
        grew = true;
      }
  }
  return stats.filter((s) => tree.has(s.pid)).reduce((sum, s) => sum + s.ticks * 10, 0);
};

/** The client's one keep-alive socket (a new Agent per service start). */
let agent = new Agent({ keepAlive: true, maxSockets: 1 });
let apiKey = '';

const call = (
  method: string,
  path: string,
  body?: unknown,
  key = apiKey,
): Promise<{ status: number; json: unknown }> =>
  new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { authorization: `Bearer ${key}` };
    if (payload !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    const req = request(`${base}${path}`, { method, agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        resolve({ status: res.statusCode ?? 0, json: text && text[0] === '{' ? JSON.parse(text) : text });
      });
    });
    // A kept-alive socket the service closed meanwhile: sent again on a new one, as clients do.
    req.on('error', (e: NodeJS.ErrnoException) =>
      req.reusedSocket && e.code === 'ECONNRESET' ? resolve(call(method, path, body, key)) : reject(e),
    );
    req.end(payload);
  });

/** Starts the service (`npm start`'s way, or cli.ts alone) and waits until /v1/health answers. */
const startService = async (how: 'npm-start' | 'cli'): Promise<Service> => {
  const started = performance.now();
  const child =
    how === 'npm-start'
      ? spawn('bash', [join(ROOT, 'scripts', 'run.sh'), 'serve'], {
          cwd: ROOT,
          env: { ...serviceEnv, NODE_OPTIONS: profileArgs.join(' ') },
          stdio: ['ignore', 'pipe', 'pipe'],
        })
      : spawn(
          process.execPath,
          // As npm start runs it: with Node's startup snapshot (scripts/main.ts).
          [...profileArgs, join(ROOT, 'host', 'cli.ts'), 'serve'],
          {
            cwd: ROOT,
            env: serviceEnv,
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
  const lines: string[] = [];
  const collect = (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean));
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  agent = new Agent({ keepAlive: true, maxSockets: 1 });
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the service exited:\n${lines.join('\n')}`);
    const ok = await call('GET', '/v1/health', undefined, '').then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return { child, lines, readyMs: performance.now() - started, cpuMs: treeCpuMs(child.pid ?? 0) };
    await new Promise((r) => setTimeout(r, 2));
  }
};

const stopService = async (service: Service): Promise<void> => {
  agent.destroy();
  if (service.child.exitCode !== null) return;
  const exited = new Promise((r) => service.child.once('exit', r));
  service.child.kill('SIGTERM');
  await exited;
};

/** Runs one batch of one call; throws unless it answered ok. */
const tool = async (agentId: string, name: string, args: Record<string, unknown>): Promise<unknown> => {
  const r = await call('POST', `/v1/agents/${agentId}/calls`, {
    calls: [{ id: 'c', name, arguments: args }],
  });
  const result = (r.json as { results?: { ok: boolean; output?: unknown }[] }).results?.[0];
  if (r.status !== 200 || result?.ok !== true)
    throw new Error(`${name}: ${r.status} ${JSON.stringify(r.json)}`);
  return result.output;
};

const createAgent = async (): Promise<string> => {
  const r = await call('POST', '/v1/agents', { mode: 'both' });
  if (r.status !== 201) throw new Error(`create agent: ${r.status} ${JSON.stringify(r.json)}`);
  return (r.json as { id: string }).id;
};

/** The warm pool's gauges, from /metrics. */
const pool = async (): Promise<{ size: number; available: number }> => {
  const text = String((await call('GET', '/metrics', undefined, METRICS_KEY)).json);
  const gauge = (name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  return { size: gauge('dsh_warm_pool_size'), available: gauge('dsh_warm_pool_available') };
};
const poolFull = async (): Promise<void> => {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const p = await pool();
    if (p.available >= p.size || Date.now() > deadline) return;
    // Not faster: a scrape costs the service work of its own (disk usage of every workspace).
    await new Promise((r) => setTimeout(r, 250));
  }
};

const timed = async (fn: () => Promise<unknown>): Promise<number> => {
  const t = performance.now();
  await fn();
  return performance.now() - t;
};

const bareIsolate = async (): Promise<void> => {
  const fresh = new ivm.Isolate({ memoryLimit: 64 });
  await (await fresh.createContext()).eval('1');
  fresh.dispose();
};

/** The floors (bench/lib/http-floor.ts): a bare node:http server's answer, and with one hop to another process. */
const FLOOR_DIRECT = 'floor: a bare node:http server answers the same bytes';
const FLOOR_HOP = 'floor: the same, after a round trip to another process (a call that needs its sandbox)';
const REQUEST_HEALTH = 'request path: GET /v1/health (no key)';
const REQUEST_AGENT = 'request path: GET /v1/agents/:id (its key checked, the agent looked up)';
/** The floors under the sandbox rows, measured in the same rounds (bench/lib/link-floor.ts, chain-floor.ts). */
const LINK_READ = 'floor: read 1 KiB over a sandboxd link, no service around it';
const LINK_EXEC = 'floor: exec `true` over a sandboxd link, no service around it';
const LINK_TWENTY = 'floor: 20 sequential reads of 1 KiB over a sandboxd link, no service around it';
const WORKER_TWENTY =
  'floor: 20 sequential round trips between a forked worker and its parent (IPC), no work';
let floor: FloorServer | undefined;
let linkFloor: LinkFloor | undefined;
let workerFloor: ChainFloor | undefined;

const rows = new Map<string, number[]>();
const add = (row: string, ms: number): void => {
  rows.set(row, [...(rows.get(row) ?? []), ms]);
};
const KIB = 'x'.repeat(1024);
const TWENTY = `for (let i = 0; i < 20; i++) await tools.read({ file_path: 'bench.txt' });\nreturn 1;`;

/**
 * The rows this process measures itself (the floors, the bare isolate, the docker CLI) are measured
 * as the service runs its calls: with idle CPUs polling while they run when the service does
 * (DSH_IDLE_POLL read from this environment as the service reads it, host/idle-poll.ts).
 */
const settings = loadConfig();
const benchPoll = createIdlePoll({ enabled: settings.idlePoll, lingerMs: settings.idlePollLingerMs });
const ownRow = (row: string): boolean =>
  row.startsWith('floor') || row.startsWith('bare') || row.startsWith('docker exec');

/** The per-call rows: BLOCK sequential calls of each row in turn, round by round, the baselines among them. */
const measureCalls = async (agentId: string, container: string): Promise<void> => {
  const steps: Array<[string, () => Promise<unknown>]> = [
    ['bash `true`', () => tool(agentId, 'bash', { command: 'true', description: 'bench' })],
    ['read 1 KiB', () => tool(agentId, 'read', { file_path: 'bench.txt' })],
    ['write 1 KiB', () => tool(agentId, 'write', { file_path: 'written.txt', content: KIB })],
    ['run_code `return 1`', () => tool(agentId, 'run_code', { code: 'return 1', description: 'bench' })],
    [
      '20 sequential tools.read in one program',
      () => tool(agentId, 'run_code', { code: TWENTY, description: 'bench' }),
    ],
    // The request path's depth, for the main thread's CPU beside the floor server's: no key, a key
    // and the agent looked up, then the rows above (a body, the pipeline, the sandbox, the log).
    [REQUEST_HEALTH, () => call('GET', '/v1/health', undefined, '')],
    [REQUEST_AGENT, () => call('GET', `/v1/agents/${agentId}`)],
    ['docker exec true (CLI)', () => run('docker', ['exec', container, 'true'])],
    ['bare isolated-vm isolate `return 1`', bareIsolate],
    [FLOOR_DIRECT, () => (floor as FloorServer).post(false)],
    [FLOOR_HOP, () => (floor as FloorServer).post(true)],
    [LINK_READ, () => (linkFloor as LinkFloor).read()],
    [LINK_EXEC, () => (linkFloor as LinkFloor).exec()],
    [LINK_TWENTY, () => (linkFloor as LinkFloor).reads(20)],
    [WORKER_TWENTY, () => (workerFloor as ChainFloor).program()],
  ];
  const chosen = steps.filter(([row]) => wanted(row));
  const service = servicePid();
  for (const [row, fn] of chosen) warmedWith.set(row, await warmUp(row, fn, service, container));
  for (let done = 0; done < RUNS; done += BLOCK)
    for (const [row, fn] of chosen) {
      const n = Math.min(BLOCK, RUNS - done);
      const before = cpuNow(service, container);
      const polled = ownRow(row);
      for (let k = 0; k < n; k++) {
        if (polled) benchPoll.touch();
        const ms = await timed(fn);
        if (polled) benchPoll.touch();
        add(row, ms);
        if (k === 0) firsts.set(row, [...(firsts.get(row) ?? []), ms]);
      }
      const after = cpuNow(service, container);
      const used = cpu.get(row) ?? [0, 0, 0, 0, 0, 0];
      cpu.set(
        row,
        [0, 1, 2, 3, 4, 5].map((k) => (used[k] as number) + (after[k] as number) - (before[k] as number)),
      );
    }
};

/** Calls each row made before it was measured. */
const warmedWith = new Map<string, number>();

/**
 * Warm-up: the service's code tiered up by V8 as in a service that has run a while. A row's calls
 * are made in chunks until V8's background threads in the service and its isolate workers (its
 * optimising compilers, Maglev and TurboFan, and GC helpers) used at most SETTLED of the main
 * thread's CPU over a chunk: 200 calls a row left them compiling ~3 functions a call
 * (--trace-opt), at ~0.4 ms of their CPU a read on this 2-core machine, which competes with the
 * call. At least WARMUP calls, at most WARMUP_MAX; rows off the service (the floors, the bare
 * isolate) make WARMUP_MAX calls, as much as any service row may have had; the docker CLI 3.
 */
const warmUp = async (
  row: string,
  fn: () => Promise<unknown>,
  service: number,
  container: string,
): Promise<number> => {
  if (row.startsWith('docker exec')) {
    for (let i = 0; i < 3; i++) await fn();
    return 3;
  }
  const own = !row.startsWith('floor') && !row.startsWith('bare');
  const program = row.includes('20 sequential');
  const chunk = program ? 10 : 100;
  const most = program ? WARMUP_MAX / 10 : WARMUP_MAX;
  let calls = 0;
  for (;;) {
    const before = cpuNow(service, container);
    for (let i = 0; i < chunk; i++) await fn();
    calls += chunk;
    const after = cpuNow(service, container);
    const background = (after[5] as number) - (before[5] as number);
    const main = (after[0] as number) - (before[0] as number);
    if (calls >= most || (own && calls >= WARMUP && background <= SETTLED * main)) return calls;
  }
};

/** Each row's first call of a block (after another row's calls): what a call costs when it follows other work. */
const firsts = new Map<string, number[]>();

/** CPU each call row used, summed over its runs: the service's main thread, its whole process, the container, the isolate workers, the floor server's main thread. */
const cpu = new Map<string, number[]>();

/** The service's own process (host/cli.ts serve) among the bench's descendants. */
const servicePid = (): number => {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      const env = readFileSync(`/proc/${entry}/environ`, 'utf8');
      if (cmd.includes('host/cli.ts\0serve') && env.includes(`DSH_DATA_DIR=${dataDir}\0`))
        return Number(entry);
    } catch {}
  }
  throw new Error('the service process was not found');
};

/** Time on a CPU in ms (schedstat, ns): the service's main thread, all its threads, the agent's container (cgroup v1 cpuacct), the isolate workers (all their threads), the floor server's main thread. */
const cpuNow = (pid: number, container: string): number[] => {
  const onCpu = (file: string): number => Number(readFileSync(file, 'utf8').split(' ')[0]) / 1e6;
  const threadsOf = (p: number): number =>
    readdirSync(`/proc/${p}/task`).reduce((sum, tid) => sum + onCpu(`/proc/${p}/task/${tid}/schedstat`), 0);
  const threads = threadsOf(pid);
  let box = Number.NaN;
  try {
    box = Number(readFileSync(`/sys/fs/cgroup/cpuacct/docker/${container}/cpuacct.usage`, 'utf8')) / 1e6;
  } catch {}
  let workers = 0;
  if (workerPids.length === 0) workerPids = isolateWorkers(pid);
  for (const worker of workerPids) {
    try {
      workers += threadsOf(worker);
    } catch {
      workerPids = []; // one restarted: looked up again next time, this call's figure is short
    }
  }
  let floorThread = Number.NaN;
  try {
    if (floor !== undefined) floorThread = onCpu(`/proc/${floor.pid}/task/${floor.pid}/schedstat`);
  } catch {}
  let background = 0;
  for (const p of [pid, ...workerPids]) {
    try {
      background += v8BackgroundOf(p);
    } catch {}
  }
  return [onCpu(`/proc/${pid}/task/${pid}/schedstat`), threads, box, workers, floorThread, background];
};

/** CPU ms of a process's V8 platform threads (named V8Worker: concurrent compilation, GC helpers). */
const v8BackgroundOf = (p: number): number =>
  readdirSync(`/proc/${p}/task`).reduce((sum, tid) => {
    if (readFileSync(`/proc/${p}/task/${tid}/comm`, 'utf8').trim() !== 'V8Worker') return sum;
    return sum + Number(readFileSync(`/proc/${p}/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  }, 0);

let workerPids: number[] = [];
/** The service's run_code isolate workers (processes of their own: host/isolates/worker.ts). */
const isolateWorkers = (pid: number): number[] =>
  readdirSync('/proc').flatMap((entry) => {
    if (!/^\d+$/.test(entry)) return [];
    try {
      const ppid = Number(readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]);
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      return ppid === pid && cmd.includes('isolates/worker.ts') ? [Number(entry)] : [];
    } catch {
      return [];
    }
  });

/** How long the agent-ready rounds leave the machine idle before an agent's third call. */
const IDLE_MS = 2000;

/** Agent ready: create, then its first bash `true` done; the pool full before each, the agent deleted after. */
const measureReady = async (): Promise<void> => {
  for (let i = 0; i < READY_RUNS + 1; i++) {
    await poolFull();
    let id = '';
    let created = 0;
    const ms = await timed(async () => {
      id = await createAgent();
      created = performance.now();
      await tool(id, 'bash', { command: 'true', description: 'bench' });
    });
    const firstBash = performance.now() - created;
    const second = await timed(() => tool(id, 'bash', { command: 'true', description: 'bench' }));
    // The same call after the machine sat idle as long as a pooled sandbox waits for its agent.
    await new Promise((r) => setTimeout(r, IDLE_MS));
    const idle = await timed(() => tool(id, 'bash', { command: 'true', description: 'bench' }));
    // And the floor's server after as long idle: what any server on this machine pays for it.
    await new Promise((r) => setTimeout(r, IDLE_MS));
    const idleFloor = floor === undefined ? undefined : await timed(() => (floor as FloorServer).post(true));
    if (i > 0) {
      add('agent ready (create, first bash `true`)', ms);
      add('  of it: create', ms - firstBash);
      add('  of it: the first bash `true`', firstBash);
      add("  the agent's second bash `true` (not part of ready)", second);
      add(`  its third, after ${IDLE_MS / 1000} s idle (not part of ready)`, idle);
      if (idleFloor !== undefined) add(`  the floor with a hop, after ${IDLE_MS / 1000} s idle`, idleFloor);
    }
    await call('DELETE', `/v1/agents/${id}`);
  }
};

const TARGETS: Record<string, [number, string]> = {
  'bash `true`': [3, 'docker'],
  'read 1 KiB': [1.5, 'docker'],
  'write 1 KiB': [Number.NaN, 'docker'],
  'run_code `return 1`': [3, 'isolate'],
  '20 sequential tools.read in one program': [10, 'isolate'],
  'agent ready (create, first bash `true`)': [15, 'docker'],
  'warm start, `npm start` until /v1/health': [1500, 'none'],
  'warm start, `host/cli.ts serve` alone until /v1/health': [Number.NaN, 'none'],
};

const report = (): void => {
  const p50 = (row: string) => quantile(rows.get(row) ?? [], 0.5);
  const dockerP50 = p50('docker exec true (CLI)');
  const isolateP50 = p50('bare isolated-vm isolate `return 1`');
  const hopP50 = p50(FLOOR_HOP);
  const fmt = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2));
  console.log(
    `\nhttp-latency: ${RUNS} runs per call row in blocks of ${BLOCK} (${READY_RUNS} agent-ready, ${STARTS} warm starts), ms; idle CPUs poll while calls run (DSH_IDLE_POLL): ${settings.idlePoll ? `on, ${benchPoll.state === 'unavailable' ? 'but /dev/cpu_dma_latency refused' : `${settings.idlePollLingerMs} ms after`}` : 'off'}`,
  );
  console.log('row | p50 | p90 | p99 | ratio | target');
  for (const [row, xs] of rows) {
    const [target, against] = TARGETS[row] ?? [Number.NaN, 'none'];
    const ratio =
      against === 'docker'
        ? ` ×${(p50(row) / dockerP50).toFixed(3)} of docker exec`
        : against === 'isolate'
          ? ` ×${(p50(row) / isolateP50).toFixed(2)} of a bare isolate`
          : '';
    const overFloor =
      rows.has(FLOOR_HOP) && (against === 'docker' || row.startsWith('run_code')) && !row.startsWith('agent')
        ? `, ×${(p50(row) / hopP50).toFixed(2)} of the floor with a hop`
        : '';
    const verdict = Number.isNaN(target) ? '' : ` ≤ ${target} ${p50(row) <= target ? 'met' : 'NOT met'}`;
    const used = cpu.get(row);
    const cpuText =
      used === undefined || row.startsWith('bare') || (row.startsWith('floor') && !row.includes('node:http'))
        ? ''
        : row.startsWith('floor')
          ? ` | CPU a call: its server's main thread ${fmt((used[4] as number) / xs.length)}`
          : ` | CPU a call: service main thread ${fmt((used[0] as number) / xs.length)}, all its threads ${fmt((used[1] as number) / xs.length)}, the container ${fmt((used[2] as number) / xs.length)}, the isolate workers ${fmt((used[3] as number) / xs.length)}, V8's background threads ${fmt((used[5] as number) / xs.length)}`;
    const first = firsts.get(row);
    const firstText =
      first === undefined || BLOCK === 1 ? '' : ` | the first of a block: p50 ${fmt(quantile(first, 0.5))}`;
    const warmed = warmedWith.get(row);
    const warmText = warmed === undefined ? '' : ` | after ${warmed} unmeasured calls`;
    console.log(
      `${row} | ${fmt(quantile(xs, 0.5))} | ${fmt(quantile(xs, 0.9))} | ${fmt(quantile(xs, 0.99))} |${ratio}${overFloor} |${verdict}${firstText}${cpuText}${warmText}`,
    );
  }
  reportFloors(p50, fmt);
};

/**
 * Each sandbox row beside the sum of its parts' floors in this run (p50s): the HTTP floor, the
 * sandbox calls made directly over a link, and for a program the worker's round trips. What a row
 * costs above its sum is the service's work: routing, the key, validation, policy, the log, the isolate.
 */
const reportFloors = (p50: (row: string) => number, fmt: (ms: number) => string): void => {
  const sums: Array<[string, string[]]> = [
    ['bash `true`', [FLOOR_DIRECT, LINK_EXEC]],
    ['read 1 KiB', [FLOOR_DIRECT, LINK_READ]],
    ['20 sequential tools.read in one program', [FLOOR_DIRECT, LINK_TWENTY, WORKER_TWENTY]],
  ];
  const lines = sums
    .filter(([row, parts]) => rows.has(row) && parts.every((part) => rows.has(part)))
    .map(([row, parts]) => {
      const sum = parts.reduce((total, part) => total + p50(part), 0);
      const [target] = TARGETS[row] ?? [Number.NaN];
      const below = target !== undefined && sum > target ? '; the floor is above the target' : '';
      return `${row}: ${fmt(p50(row))} against its floor ${fmt(sum)} (${parts.map((part) => fmt(p50(part))).join(' + ')}): ×${(p50(row) / sum).toFixed(2)}${below}`;
    });
  if (lines.length === 0) return;
  console.log('\nfloors in this run (the sum of the p50s of the floor rows under each):');
  for (const line of lines) console.log(line);
};

let service: Service | undefined;
let instance = '';
const agents: string[] = [];
try {
  service = await startService('npm-start');
  console.log(
    `http-latency bench: image ${image}; first start in a new data directory ${service.readyMs.toFixed(0)} ms`,
  );
  instance = /instance (\S+):/.exec(service.lines.join('\n'))?.[1] ?? '';
  apiKey = readFileSync(join(dataDir, 'default-tenant.key'), 'utf8').trim();
  if (process.env.BENCH_UNTRACKED === '1') {
    const r = await call('PUT', '/v1/settings', { checkpoints: { maxCount: 0 } });
    if (r.status !== 200) throw new Error(`settings: ${r.status} ${JSON.stringify(r.json)}`);
  }
  const agentId = await createAgent();
  agents.push(agentId);
  await tool(agentId, 'write', { file_path: 'bench.txt', content: KIB });
  const listed = await docker.listContainers({ filters: { label: [`dsh.instance=${instance}`] } });
  const mine = listed.find((c) => c.Names.some((n) => n.includes('-agent-')));
  if (!mine) throw new Error(`no agent container of instance ${instance}`);
  floor = await startFloorServer();
  linkFloor = await startLinkFloor(docker, image);
  workerFloor = await startChainFloor(20, { daemon: false });
  await measureCalls(agentId, mine.Id);
  workerFloor.stop();
  await linkFloor.stop();
  if (wanted('agent ready')) await measureReady();
  await floor.stop();
  for (const how of ['npm-start', 'cli'] as const) {
    if (!wanted('warm start')) break;
    for (let i = 0; i < STARTS; i++) {
      await stopService(service);
      service = await startService(how);
      add(
        how === 'npm-start'
          ? 'warm start, `npm start` until /v1/health'
          : 'warm start, `host/cli.ts serve` alone until /v1/health',
        service.readyMs,
      );
      add(
        how === 'npm-start'
          ? 'warm start, `npm start`: CPU of its processes until then'
          : 'warm start, `host/cli.ts serve` alone: CPU until then',
        service.cpuMs,
      );
    }
  }
  report();
} catch (error) {
  // What the service said last, for a run that failed.
  console.error(service?.lines.slice(-30).join('\n'));
  throw error;
} finally {
  await floor?.stop();
  workerFloor?.stop();
  await linkFloor?.stop();
  if (service) {
    for (const id of agents) await call('DELETE', `/v1/agents/${id}`).catch(() => undefined);
    await stopService(service);
  }
  // Whatever is still labelled with this run's instance id (the pool, a failed deletion).
  if (instance)
    for (const c of await docker.listContainers({
      all: true,
      filters: { label: [`dsh.instance=${instance}`] },
    }))
      await docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined);
  if (config.diskQuota)
    await createLoopWorkspaces(config.workspacesDir)
      .sweep([], true)
      .catch(() => undefined);
  rmSync(dataDir, { recursive: true, force: true });
}
