// Density: what an idle agent costs, and whether the API stays quick while many programs run.
// Run: node --no-node-snapshot --expose-gc bench/density.ts [N=100] [PROGRAMS=200]
// (image: DSH_SANDBOX_IMAGE, else the one setup builds; the pool as configured, DSH_POOL_SIZE).
// It starts the service in this process on a fresh data directory (so a fresh instance id: every
// container it makes carries it), creates N agents and gives each its sandbox with one small call,
// then measures memory per idle agent: the container's cgroup memory (usage and anonymous RSS),
// the RSS of the processes in it (docker-init and sandboxd), and this process's heap and RSS
// growth. Then it runs PROGRAMS `run_code` programs at once over HTTP (`return 1`, spread over the
// agents) while a separate client samples a small call (`GET /v1/agents/:id`) every 10 ms, and
// prints that call's p50/p99 idle and under the load. Both clients are processes of their own, as
// real clients are: in this process their fetch work (undici alone was 13% of its CPU samples)
// would queue on the service's own event loop. DENSITY_ROUNDS (default 1) repeats the burst.
// DSH_FAIR_TURN_MS=0 turns the control plane's fair scheduler off (host/api/fair.ts), and
// DSH_ISOLATE_NICE=0 leaves the isolate workers at the service's niceness, for baselines;
// DENSITY_BURST_NICE=n runs the burst's client at niceness n (as if it were on another machine).
// Fewer agents (N=20) make a quicker run: the burst is the same 200 programs.
// Where a loaded sample's time went: until the service's handler saw it, the handling, and back to
// the client (on the monotonic clock all processes share); the main-thread CPU and collections
// during the slowest ones; the CPU time of every thread of the service and of every other process
// during the bursts (the isolate workers, the clients, the engine, the rest of the machine); the
// collections (PerformanceObserver 'gc'). DENSITY_TRACE=file writes the samples' parts, the
// collections and the loop probes as JSON, to lay beside a --cpu-prof profile of this process.
// At the end it deletes its agents, stops the service and removes whatever is still
// labelled with its instance id (only its own containers).
import { spawn } from 'node:child_process';
import diagnostics from 'node:diagnostics_channel';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { availableParallelism, setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import Docker from 'dockerode';
import { loadConfig } from '../host/config.ts';
import { createLoopWorkspaces } from '../host/sandbox/docker/index.ts';
import { startServer } from '../host/serve.ts';
import { openStore } from '../host/store/index.ts';

const N = Number(process.argv[2] ?? 100);
const PROGRAMS = Number(process.argv[3] ?? 200);
const ROUNDS = Number(process.env.DENSITY_ROUNDS ?? 1);
const MiB = 1024 * 1024;
const docker = new Docker();
const image =
  loadConfig().sandboxImage ?? (await (await import('../scripts/setup/image.ts')).ensureSandboxImage()).tag;

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
};
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();
const mib = (bytes: number): string => `${(bytes / MiB).toFixed(1)} MiB`;
/** The monotonic clock in ms, shared by every process on the machine (the clients use it too). */
const monotonic = (): number => Number(process.hrtime.bigint()) / 1e6;
/** performance.now() + hrOffset ≈ monotonic(). */
const hrOffset = monotonic() - performance.now();

/** Memory of one container: cgroup v1 files where they are, else one docker stats sample. */
const containerMemory = async (id: string): Promise<{ usage: number; rss: number; procRss: number }> => {
  const dir = `/sys/fs/cgroup/memory/docker/${id}`;
  try {
    const usage = Number(await readFile(`${dir}/memory.usage_in_bytes`, 'utf8'));
    const stat = await readFile(`${dir}/memory.stat`, 'utf8');
    const rss = Number(/^total_rss (\d+)/m.exec(stat)?.[1] ?? /^rss (\d+)/m.exec(stat)?.[1] ?? 0);
    let procRss = 0;
    for (const pid of (await readFile(`${dir}/cgroup.procs`, 'utf8')).split('\n').filter(Boolean)) {
      const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
      procRss += Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) * 1024;
    }
    return { usage, rss, procRss };
  } catch {
    const stats = (await docker.getContainer(id).stats({ stream: false })) as {
      memory_stats: { usage?: number; stats?: { rss?: number; total_rss?: number } };
    };
    const rss = stats.memory_stats.stats?.total_rss ?? stats.memory_stats.stats?.rss ?? 0;
    return { usage: stats.memory_stats.usage ?? 0, rss, procRss: Number.NaN };
  }
};

/**
 * CPU time (ms) of every thread of this process and every other process on the machine, by id,
 * with what it is to this run: a thread of the service by its name, the isolate workers, the
 * clients, the engine, the rest. (A process that ends between two readings is not counted.)
 */
const cpuByWho = (): Map<string, { who: string; ms: number }> => {
  const tick = 10; // ms per clock tick (USER_HZ 100)
  const out = new Map<string, { who: string; ms: number }>();
  const add = (id: string, who: string, stat: string): void => {
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.set(id, { who, ms: (Number(f[11]) + Number(f[12])) * tick });
  };
  const read = (path: string): string => {
    try {
      return readFileSync(path, 'utf8');
    } catch {
      return '';
    }
  };
  for (const tid of readdirSync('/proc/self/task')) {
    const stat = read(`/proc/self/task/${tid}/stat`);
    if (stat) add(`t${tid}`, `service: ${read(`/proc/self/task/${tid}/comm`).trim()}`, stat);
  }
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    const stat = read(`/proc/${pid}/stat`);
    if (!stat) continue;
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const cmd = read(`/proc/${pid}/cmdline`).replaceAll('\0', ' ');
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const who =
      ppid === process.pid
        ? cmd.includes('isolates/worker')
          ? 'isolate workers'
          : cmd.includes(' -e ')
            ? cmd.includes(' sample ')
              ? 'sampler client'
              : 'burst client'
            : `child ${comm}`
        : /^(dockerd|containerd|containerd-shim.*)$/.test(comm)
          ? 'engine (dockerd, containerd)'
          : cmd.includes('sandboxd')
            ? 'sandboxd (every container on the machine)'
            : 'other processes';
    add(pid, who, stat);
  }
  return out;
};

const dataDir = mkdtempSync(join(tmpdir(), 'dsh-bench-density-'));
const store = openStore({ dataDir });
const instance = store.instanceId;
// Each program comes on its own connection: the tenant's connection cap (128 by default) is
// raised to fit them, as an operator expecting that many at once would.
const config = loadConfig(
  {
    host: '127.0.0.1',
    port: 0,
    dataDir,
    sandboxImage: image,
    tenantConcurrency: 10_000,
    tenantConnections: PROGRAMS + 32,
  },
  process.env,
);
const server = await startServer(config, { store, log: () => {} });
const { apiKey } = await store.tenants.createTenant('density');
const headers = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
const api = async (
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: unknown }> => {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, json: text === '' ? undefined : JSON.parse(text) };
};
const agents: string[] = [];

/**
 * The clients, each in a process of its own. `sample`: a small call every 10 ms until its stdin
 * closes, then prints [startedAt, ms] per call. `burst`: the programs at once, each on its own
 * connection, then prints when it began and ended and each program's time and outcome.
 */
const CLIENT = `
const [mode, url, key, agentsJson, programs] = process.argv.slice(1);
const agents = JSON.parse(agentsJson);
const headers = { authorization: 'Bearer ' + key, 'content-type': 'application/json' };
// The monotonic clock every process on the machine shares (the service's trace uses it too).
const wall = () => Number(process.hrtime.bigint()) / 1e6;
if (mode === 'sample') {
  const samples = [];
  let running = true;
  process.stdin.on('end', () => { running = false; }).resume();
  (async () => {
    while (running) {
      const t = wall();
      const res = await fetch(url + '/v1/agents/' + agents[0] + '?sample=' + samples.length, { headers });
      await res.text();
      samples.push([t, wall() - t]);
      await new Promise((r) => setTimeout(r, 10));
    }
    process.stdout.write(JSON.stringify(samples));
  })();
} else {
  // One round per line on stdin (spawning a process from the service's would stall its loop).
  const reasonOf = (status, body) =>
    status + ' ' + (body?.error?.code ?? body?.results?.[0]?.error?.code ?? '?');
  const round = async () => {
    const startedAt = wall();
    const results = await Promise.all(Array.from({ length: Number(programs) }, async (_, i) => {
      const t = wall();
      const res = await fetch(url + '/v1/agents/' + agents[i % agents.length] + '/calls', {
        method: 'POST',
        headers,
        body: JSON.stringify({ calls: [{ id: 'p' + i, name: 'run_code', arguments: { code: 'return 1', description: 'density' } }] }),
      });
      const text = await res.text();
      const body = text === '' ? undefined : JSON.parse(text);
      const ok = res.status === 200 && body?.results?.[0]?.ok === true;
      return [wall() - t, ok ? '' : reasonOf(res.status, body)];
    }));
    process.stdout.write(JSON.stringify({ startedAt, endedAt: wall(), programs: results }) + '\\n');
  };
  let rounds = Promise.resolve();
  require('node:readline').createInterface({ input: process.stdin }).on('line', () => {
    rounds = rounds.then(round);
  });
}
`;

const client = (mode: 'sample' | 'burst', ids: string[]) => {
  const child = spawn(
    process.execPath,
    ['-e', CLIENT, mode, server.url, apiKey, JSON.stringify(ids), String(PROGRAMS)],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  let out = '';
  const lines: ((line: string) => void)[] = [];
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    for (let nl = out.indexOf('\n'); nl >= 0 && lines.length > 0; nl = out.indexOf('\n')) {
      lines.shift()?.(out.slice(0, nl));
      out = out.slice(nl + 1);
    }
  });
  const exited = new Promise<string>((resolve, reject) =>
    child.on('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${mode} client exited ${code}`)),
    ),
  );
  return {
    pid: child.pid as number,
    /** A burst client's next round: what it printed for it. */
    round: (): Promise<string> =>
      new Promise((resolve) => {
        lines.push(resolve);
        child.stdin.write('go\n');
      }),
    /** Closes its stdin (which ends it) and returns what it printed last. */
    output: async (): Promise<string> => {
      child.stdin.end();
      return exited;
    },
  };
};

try {
  console.log(
    `density bench: ${N} idle agents, ${PROGRAMS} concurrent programs, pool ${config.poolSize}, image ${image}`,
  );
  gc();
  const heapBefore = process.memoryUsage();
  const started = performance.now();
  for (let i = 0; i < N; i++) {
    const created = await api('POST', '/v1/agents', { mode: 'both' });
    if (created.status !== 201)
      throw new Error(`create agent: ${created.status} ${JSON.stringify(created.json)}`);
    const id = (created.json as { id: string }).id;
    agents.push(id);
    // One small call gives the agent its sandbox (made lazily on first use).
    const call = await api('POST', `/v1/agents/${id}/calls`, {
      calls: [{ id: 'g', name: 'glob', arguments: { pattern: '*' } }],
    });
    if (call.status !== 200) throw new Error(`first call: ${call.status} ${JSON.stringify(call.json)}`);
  }
  const createMs = performance.now() - started;
  gc();
  const heapAfter = process.memoryUsage();
  const listed = await docker.listContainers({ filters: { label: [`dsh.instance=${instance}`] } });
  const mine = listed.filter((c) => c.Names.some((n) => n.includes('-agent-')));
  const memory = await Promise.all(mine.map((c) => containerMemory(c.Id)));
  const avg = (pick: (m: (typeof memory)[number]) => number) =>
    memory.reduce((n, m) => n + pick(m), 0) / Math.max(1, memory.length);
  const heapPer = (heapAfter.heapUsed - heapBefore.heapUsed) / N;
  const rssPer = (heapAfter.rss - heapBefore.rss) / N;
  console.log(
    `created ${N} agents with their sandboxes in ${(createMs / 1000).toFixed(1)} s (${(createMs / N).toFixed(0)} ms each)`,
  );
  console.log(`memory per idle agent (${memory.length} agent containers measured):`);
  console.log(
    `  container cgroup memory usage       ${mib(avg((m) => m.usage))} (anonymous RSS ${mib(avg((m) => m.rss))})`,
  );
  console.log(`  processes in it (init + sandboxd)   ${mib(avg((m) => m.procRss))} RSS`);
  console.log(`  control plane, per agent            heap +${mib(heapPer)}, RSS +${mib(rssPer)}`);
  const hostTotal =
    Number(/^MemTotal:\s+(\d+)/m.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1] ?? 0) * 1024;
  const perAgent = avg((m) => m.usage) + Math.max(0, rssPer);
  console.log(
    `  ≈ ${mib(perAgent)} per idle agent: ${Math.floor(hostTotal / perAgent)} would fill this machine's ${mib(hostTotal)} (memory only)`,
  );

  // Where a sample's time went: each of the sampler's GETs (marked by its query) is seen by the
  // service when its request starts (headers parsed, handler called) and when its response is
  // finished, on the monotonic clock the clients use too; and the collections meanwhile.
  const seen = new Map<number, { start: number; finish: number }>();
  const sampleOf = (request: { url?: string }): number | undefined => {
    const at = request.url?.indexOf('?sample=') ?? -1;
    return at < 0 ? undefined : Number(request.url?.slice(at + 8));
  };
  const onStart = (message: unknown): void => {
    const n = sampleOf((message as { request: { url?: string } }).request);
    if (n !== undefined) seen.set(n, { start: monotonic(), finish: Number.NaN });
  };
  const onFinish = (message: unknown): void => {
    const n = sampleOf((message as { request: { url?: string } }).request);
    const entry = n === undefined ? undefined : seen.get(n);
    if (entry) entry.finish = monotonic();
  };
  diagnostics.subscribe('http.server.request.start', onStart);
  diagnostics.subscribe('http.server.response.finish', onFinish);
  const collections: { at: number; ms: number; kind: number }[] = [];
  const gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries())
      collections.push({
        at: e.startTime + hrOffset,
        ms: e.duration,
        kind: (e as { detail?: { kind?: number } }).detail?.kind ?? 0,
      });
  });
  gcObserver.observe({ entryTypes: ['gc'] });

  // The small call idle, then under PROGRAMS concurrent programs (ROUNDS times), from other processes.
  const burster = client('burst', agents);
  // DENSITY_BURST_NICE=n: the burst's client at niceness n, standing for clients on other machines
  // (its fetch work, ~1.5-2 ms of CPU a program, otherwise competes with the service for the cores).
  if (process.env.DENSITY_BURST_NICE) setPriority(burster.pid, Number(process.env.DENSITY_BURST_NICE));
  const sampling = client('sample', agents);
  await new Promise((r) => setTimeout(r, 2500));
  const bursts: { startedAt: number; endedAt: number; programs: [number, string][] }[] = [];
  // The service's event loop meanwhile: a 2 ms timer's lateness is the longest stretch of work
  // between two of its turns (a request arriving then waits at least that long); this thread's CPU
  // time between two firings is the same stretch without the time this process was not running
  // (on a loaded machine most of the lateness).
  const lags: number[] = [];
  const stretches: number[] = [];
  /** When each probe fired (monotonic ms), beside lags and stretches. */
  const probedAt: number[] = [];
  let expected = performance.now() + 2;
  let cpuBefore = process.threadCpuUsage();
  const probe = setInterval(() => {
    const now = performance.now();
    const cpu = process.threadCpuUsage();
    probedAt.push(now + hrOffset);
    lags.push(Math.max(0, now - expected));
    stretches.push((cpu.user + cpu.system - cpuBefore.user - cpuBefore.system) / 1000);
    expected = now + 2;
    cpuBefore = cpu;
  }, 2);
  const cpuInBursts = new Map<string, number>();
  for (let round = 0; round < ROUNDS; round++) {
    const whoBefore = cpuByWho();
    bursts.push(JSON.parse(await burster.round()));
    for (const [id, { who, ms }] of cpuByWho())
      cpuInBursts.set(who, (cpuInBursts.get(who) ?? 0) + ms - (whoBefore.get(id)?.ms ?? 0));
    await new Promise((r) => setTimeout(r, 500));
  }
  clearInterval(probe);
  gcObserver.disconnect();
  diagnostics.unsubscribe('http.server.request.start', onStart);
  diagnostics.unsubscribe('http.server.response.finish', onFinish);
  await burster.output();
  const samples = JSON.parse(await sampling.output()) as [number, number][];
  const firstBurst = (bursts[0] as (typeof bursts)[number]).startedAt;
  // Idle: the samples after the sampler's first 500 ms (its own warm-up) and before any burst.
  const idle = samples
    .filter(([at]) => at > (samples[0]?.[0] ?? 0) + 500 && at < firstBurst)
    .map(([, ms]) => ms);
  // Loaded: every sample that was in flight at some time during a burst.
  const during = (at: number, ms: number): boolean =>
    bursts.some((b) => at < b.endedAt && at + ms > b.startedAt);
  const loaded = samples.filter(([at, ms]) => during(at, ms)).map(([, ms]) => ms);
  // Each loaded sample in three parts: until the service's handler saw it (the client's write, the
  // wait for the service's poll phase, HTTP parsing), the service's handling until the response
  // was written, and from there until the client had read it (the client's own scheduling).
  const parts = samples.flatMap(([at, ms], n) => {
    const s = seen.get(n);
    return s && during(at, ms) && Number.isFinite(s.finish)
      ? [{ n, at, ms, toService: s.start - at, handling: s.finish - s.start, toClient: at + ms - s.finish }]
      : [];
  });
  /** Main-thread CPU (ms) between the probes that fired in [from, to]. */
  const probeCpu = (from: number, to: number): number =>
    probedAt.reduce((a, at, i) => (at > from && at <= to ? a + (stretches[i] ?? 0) : a), 0);
  const inBursts = collections.filter((c) => bursts.some((b) => c.at >= b.startedAt && c.at < b.endedAt));
  for (const burst of bursts) {
    const programMs = burst.programs.map(([ms]) => ms);
    const reasons = new Map<string, number>();
    for (const [, reason] of burst.programs)
      if (reason !== '') reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
    const failed = [...reasons.values()].reduce((a, b) => a + b, 0);
    console.log(
      `${PROGRAMS} programs at once: all done in ${((burst.endedAt - burst.startedAt) / 1000).toFixed(2)} s, each p50 ${quantile(programMs, 0.5).toFixed(0)} ms / p99 ${quantile(programMs, 0.99).toFixed(0)} ms, ${failed} failed${failed === 0 ? '' : ` (${[...reasons].map(([r, n]) => `${n}× ${r}`).join(', ')})`}`,
    );
  }
  console.log(
    `event loop during the bursts: lag p99 ${quantile(lags, 0.99).toFixed(1)} ms, max ${Math.max(...lags).toFixed(1)} ms; main-thread CPU between two turns p99 ${quantile(stretches, 0.99).toFixed(1)} ms, max ${Math.max(...stretches).toFixed(1)} ms; main-thread CPU in all ${(stretches.reduce((a, b) => a + b, 0) / 1000).toFixed(2)} s (${(stretches.reduce((a, b) => a + b, 0) / (PROGRAMS * ROUNDS)).toFixed(2)} ms a program, the samples' GETs included)`,
  );
  console.log(
    `GET /v1/agents/:id meanwhile (fair turn ${config.fairTurnMs} ms, isolate workers at niceness ${config.isolateNice}): p50 ${quantile(loaded, 0.5).toFixed(1)} ms, p99 ${quantile(loaded, 0.99).toFixed(1)} ms, max ${Math.max(...loaded).toFixed(1)} ms (${loaded.length} samples); idle p50 ${quantile(idle, 0.5).toFixed(1)} ms, p99 ${quantile(idle, 0.99).toFixed(1)} ms (${idle.length})`,
  );
  const p = (xs: number[]) => `p50 ${quantile(xs, 0.5).toFixed(1)} / p99 ${quantile(xs, 0.99).toFixed(1)}`;
  console.log(
    `  its parts (ms): until the service's handler saw it ${p(parts.map((x) => x.toService))}; handling ${p(parts.map((x) => x.handling))}; back to the client ${p(parts.map((x) => x.toClient))}`,
  );
  const worst = [...parts].sort((a, b) => b.ms - a.ms).slice(0, 5);
  for (const w of worst)
    console.log(
      `  slow sample: ${w.ms.toFixed(1)} ms = ${w.toService.toFixed(1)} to the service + ${w.handling.toFixed(1)} handling + ${w.toClient.toFixed(1)} back; main-thread CPU meanwhile ${probeCpu(w.at, w.at + w.ms).toFixed(1)} ms; collections meanwhile ${collections
        .filter((c) => c.at < w.at + w.ms && c.at + c.ms > w.at)
        .reduce((a, c) => a + c.ms, 0)
        .toFixed(1)} ms`,
    );
  const burstMs = bursts.reduce((a, b) => a + b.endedAt - b.startedAt, 0);
  console.log(
    `CPU during the bursts (${(burstMs / 1000).toFixed(2)} s of wall time on ${availableParallelism()} cores), in ms: ${[
      ...cpuInBursts,
    ]
      .filter(([, ms]) => ms > 0)
      .sort((a, b) => b[1] - a[1])
      .map(([who, ms]) => `${who} ${ms.toFixed(0)}`)
      .join(', ')}`,
  );
  const young = inBursts.filter((c) => c.kind === 1);
  console.log(
    `garbage collection during the bursts: ${inBursts.length} collections, ${inBursts.reduce((a, c) => a + c.ms, 0).toFixed(0)} ms in all (scavenges ${young.length}, ${young.reduce((a, c) => a + c.ms, 0).toFixed(0)} ms), the longest ${Math.max(0, ...inBursts.map((c) => c.ms)).toFixed(1)} ms`,
  );
  if (process.env.DENSITY_TRACE)
    writeFileSync(
      process.env.DENSITY_TRACE,
      JSON.stringify({
        bursts: bursts.map(({ startedAt, endedAt }) => ({ startedAt, endedAt })),
        parts,
        collections,
        probes: probedAt.map((at, i) => [at, lags[i], stretches[i]]),
      }),
    );
} finally {
  for (const id of agents) await api('DELETE', `/v1/agents/${id}`).catch(() => undefined);
  await server.close();
  store.close();
  // Whatever is still labelled with this run's instance id (a failed deletion, the pool).
  for (const c of await docker.listContainers({
    all: true,
    filters: { label: [`dsh.instance=${instance}`] },
  }))
    await docker
      .getContainer(c.Id)
      .remove({ force: true })
      .catch(() => undefined);
  // Unmounts and deletes this run's workspaces (loop file systems in its data directory) first.
  if (config.diskQuota)
    await createLoopWorkspaces(config.workspacesDir)
      .sweep([], true)
      .catch(() => undefined);
  rmSync(dataDir, { recursive: true, force: true });
}
