// Density: what an idle agent costs, and whether the API stays quick while many programs run.
// Run: node --no-node-snapshot --expose-gc bench/density.ts [N=100] [PROGRAMS=200]
// (image: DSH_SANDBOX_IMAGE, else the one setup builds; the pool as configured, DSH_POOL_SIZE).
// It starts the service in this process on a fresh data directory (so a fresh instance id: every
// container it makes carries it), creates N agents and gives each its sandbox with one small call,
// then measures memory per idle agent: the container's cgroup memory (usage and anonymous RSS),
// the RSS of the processes in it (docker-init and sandboxd), and this process's heap and RSS
// growth. Then it runs PROGRAMS `run_code` programs at once over HTTP (`return 1`, spread over the
// agents) while a separate client samples a small call (`GET /v1/agents/:id`) every 10 ms, and
// prints that call's p50/p99 idle and under the load. At the end it deletes its agents, stops the
// service and removes whatever is still labelled with its instance id (only its own containers).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { loadConfig } from '../host/config.ts';
import { createLoopWorkspaces } from '../host/sandbox/docker/index.ts';
import { startServer } from '../host/serve.ts';
import { openStore } from '../host/store/index.ts';

const N = Number(process.argv[2] ?? 100);
const PROGRAMS = Number(process.argv[3] ?? 200);
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
const { apiKey } = store.tenants.createTenant('density');
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

/** A small call sampled every 10 ms from its own loop; returns its latencies when stopped. */
const sampler = (agentId: string) => {
  const latencies: number[] = [];
  let running = true;
  const done = (async () => {
    while (running) {
      const t = performance.now();
      await api('GET', `/v1/agents/${agentId}`);
      latencies.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  return async () => {
    running = false;
    await done;
    return latencies;
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

  // The small call idle, then under PROGRAMS concurrent programs.
  const probe = agents[0] as string;
  const idleStop = sampler(probe);
  await new Promise((r) => setTimeout(r, 2000));
  const idle = await idleStop();
  const loadStop = sampler(probe);
  const t0 = performance.now();
  const programMs: number[] = [];
  let failed = 0;
  const reasons = new Map<string, number>();
  const reasonOf = (res: { status: number; json: unknown }): string => {
    const body = res.json as
      | { error?: { code?: string }; results?: { error?: { code?: string } }[] }
      | undefined;
    return `${res.status} ${body?.error?.code ?? body?.results?.[0]?.error?.code ?? '?'}`;
  };
  await Promise.all(
    Array.from({ length: PROGRAMS }, async (_, i) => {
      const t = performance.now();
      const res = await api('POST', `/v1/agents/${agents[i % agents.length]}/calls`, {
        calls: [{ id: `p${i}`, name: 'run_code', arguments: { code: 'return 1', description: 'density' } }],
      });
      programMs.push(performance.now() - t);
      const ok = (res.json as { results?: { ok: boolean }[] } | undefined)?.results?.[0]?.ok;
      if (res.status !== 200 || ok !== true) {
        failed++;
        reasons.set(reasonOf(res), (reasons.get(reasonOf(res)) ?? 0) + 1);
      }
    }),
  );
  const wallMs = performance.now() - t0;
  const loaded = await loadStop();
  console.log(
    `${PROGRAMS} programs at once: all done in ${(wallMs / 1000).toFixed(2)} s, each p50 ${quantile(programMs, 0.5).toFixed(0)} ms / p99 ${quantile(programMs, 0.99).toFixed(0)} ms, ${failed} failed${failed === 0 ? '' : ` (${[...reasons].map(([r, n]) => `${n}× ${r}`).join(', ')})`}`,
  );
  console.log(
    `GET /v1/agents/:id meanwhile: p50 ${quantile(loaded, 0.5).toFixed(1)} ms, p99 ${quantile(loaded, 0.99).toFixed(1)} ms (${loaded.length} samples); idle p50 ${quantile(idle, 0.5).toFixed(1)} ms, p99 ${quantile(idle, 0.99).toFixed(1)} ms (${idle.length})`,
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
