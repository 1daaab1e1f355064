// Replicas on one PostgreSQL database (host/replicas), each a real `serve` process, in one run:
//  - calls per second with 1, 2 and 3 replicas: CLIENTS clients, each with an agent of its own,
//    send one-call batches (`schedule_list`: the control plane and the store, no sandbox) to the
//    replicas in turn, so about (N-1)/N of the requests are forwarded to the family's owner;
//  - fail-over: `kill -9` of the replica that runs an agent, then how long until the agent answers
//    again through another replica (the lease, DSH_REPLICA_LEASE_MS, is most of it), for two leases.
// Run: node --no-node-snapshot bench/replicas.ts (needs PostgreSQL's binaries: npm run setup).
// The machine's load is printed with the figures; on 2 cores the replicas share the CPU with
// PostgreSQL and the clients, so the point is the overhead and that nothing is lost, not scaling.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { ensureSandboxImage } from '../scripts/setup/image.ts';
import { findPostgresBin } from '../scripts/setup/postgres.ts';
import { postgresUrl, startPostgresCluster } from '../tests/helpers/postgres-cluster.ts';

const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 6);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const CLI = fileURLToPath(new URL('../host/cli.ts', import.meta.url));

const bin = await findPostgresBin();
if (bin === undefined)
  throw new Error('no PostgreSQL binaries: run `npm run setup` (installs postgresql-15)');
for (const name of Object.keys(process.env)) if (name.startsWith('PG')) delete process.env[name];
const cluster = startPostgresCluster(bin);
// The sandbox image of this checkout (built once if missing): `serve` refuses to start without one.
const { tag: image } = await ensureSandboxImage();
const dirs: string[] = [];
const children: ChildProcess[] = [];
let databases = 0;

/** CPU time (user + system, ms) a process has used, from /proc (Linux). */
const cpuMsOf = (pid: number | undefined): number => {
  if (pid === undefined) return 0;
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // clock ticks of 10 ms
};

const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

const newDatabase = async (): Promise<string> => {
  const name = `bench_replicas_${++databases}`;
  const admin = new pg.Client({ connectionString: cluster.adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  return postgresUrl(cluster.socketDir, name);
};

interface Running {
  child: ChildProcess;
  url: string;
  dataDir: string;
}

const startReplica = async (
  database: string,
  secretsKey: string,
  id: string,
  leaseMs: number,
): Promise<Running> => {
  const dataDir = mkdtempSync(join(tmpdir(), `dsh-bench-replica-${id}-`));
  dirs.push(dataDir);
  const child = spawn(process.execPath, ['--no-node-snapshot', CLI, 'serve'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH,
      HOME: dataDir,
      DSH_DB: database,
      DSH_DATA_DIR: dataDir,
      DSH_PORT: '0',
      DSH_HOST: '127.0.0.1',
      DSH_POOL_SIZE: '0',
      DSH_SECRETS_KEY: secretsKey,
      DSH_REPLICA_ID: id,
      DSH_REPLICA_LEASE_MS: String(leaseMs),
      DSH_SANDBOX_IMAGE: image,
    },
  });
  children.push(child);
  let err = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1] as string);
    });
    child.once('exit', (code) => reject(new Error(`replica ${id} exited (${code}):\n${out}\n${err}`)));
  });
  return { child, url, dataDir };
};

const call = async (url: string, key: string, agentId: string, n: number): Promise<number> => {
  const res = await fetch(`${url}/v1/agents/${agentId}/calls`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ calls: [{ id: `c${n}`, name: 'schedule_list', arguments: {} }] }),
  });
  await res.arrayBuffer();
  return res.status;
};

/** Starts N replicas on a fresh database; the first makes the default tenant. */
const startCluster = async (n: number, leaseMs: number) => {
  const database = await newDatabase();
  const secretsKey = randomBytes(32).toString('base64');
  const replicas = [await startReplica(database, secretsKey, 'r0', leaseMs)];
  for (let i = 1; i < n; i++) replicas.push(await startReplica(database, secretsKey, `r${i}`, leaseMs));
  const key = readFileSync(join(replicas[0]!.dataDir, 'default-tenant.key'), 'utf8').trim();
  return { replicas, key };
};

const createAgent = async (url: string, key: string): Promise<string> => {
  const res = await fetch(`${url}/v1/agents`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: '{}',
  });
  return ((await res.json()) as { id: string }).id;
};

const stop = async (running: Running[]) => {
  for (const r of running) {
    if (r.child.exitCode !== null || r.child.signalCode !== null) continue;
    const exited = new Promise((resolve) => r.child.once('exit', resolve));
    r.child.kill('SIGTERM');
    await exited;
  }
};

/**
 * Calls per second with N replicas, clients going round the replicas; `direct`: each client sends
 * every batch to its agent's owner (nothing forwarded: what replicas cost without forwarding).
 */
const throughput = async (n: number, direct = false) => {
  const { replicas, key } = await startCluster(n, 15_000);
  const agents: string[] = [];
  for (let i = 0; i < CLIENTS; i++) {
    const owner = replicas[i % n]!;
    const id = await createAgent(owner.url, key);
    await call(owner.url, key, id, -1); // the family's owner: the replica of its first call
    agents.push(id);
  }
  let done = 0;
  let failed = 0;
  const until = performance.now() + SECONDS * 1000;
  const cpu = process.cpuUsage();
  const replicaCpu = replicas.map((r) => cpuMsOf(r.child.pid));
  await Promise.all(
    agents.map(async (id, i) => {
      for (let k = 0; performance.now() < until; k++) {
        const via = replicas[direct ? i % n : (i + k) % n]!;
        if ((await call(via.url, key, id, k)) === 200) done++;
        else failed++;
      }
    }),
  );
  const clientCpuMs = (process.cpuUsage(cpu).user + process.cpuUsage(cpu).system) / 1000;
  const usedMs = replicas.reduce((sum, r, i) => sum + cpuMsOf(r.child.pid) - (replicaCpu[i] ?? 0), 0);
  await stop(replicas);
  return {
    n,
    direct,
    perSecond: done / SECONDS,
    failed,
    clientCpuMs,
    replicaCpuMsPerBatch: usedMs / Math.max(1, done),
  };
};

/** From kill -9 of an agent's owner until the agent answers through another replica. */
const failover = async (leaseMs: number) => {
  const { replicas, key } = await startCluster(2, leaseMs);
  const [a, b] = replicas as [Running, Running];
  const id = await createAgent(a.url, key);
  await call(a.url, key, id, 0);
  const killedAt = performance.now();
  a.child.kill('SIGKILL');
  let attempts = 0;
  for (;;) {
    attempts++;
    if ((await call(b.url, key, id, attempts).catch(() => 0)) === 200) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const ms = performance.now() - killedAt;
  await stop(replicas);
  return { leaseMs, ms, attempts };
};

try {
  console.log(`load before: ${load()} (1, 5, 15 min); ${CLIENTS} clients, ${SECONDS} s per run`);
  const runs = [];
  // One replica again at the end: how far the machine's load drifted during the run.
  for (const [n, direct] of [[1], [2, true], [2], [3, true], [3], [1]] as [number, boolean?][])
    runs.push(await throughput(n, direct));
  const base = runs[0]!.perSecond;
  for (const r of runs)
    console.log(
      `${r.n} replica(s): ${r.perSecond.toFixed(0)} one-call batches/s (${(r.perSecond / base).toFixed(2)}x of one), ${r.failed} failed; ` +
        `${r.direct ? 'none' : `about ${(((r.n - 1) / r.n) * 100).toFixed(0)}%`} forwarded; the replicas' CPU per batch ${r.replicaCpuMsPerBatch.toFixed(2)} ms ` +
        `(${(r.replicaCpuMsPerBatch / runs[0]!.replicaCpuMsPerBatch).toFixed(2)}x of one)`,
    );
  for (const leaseMs of [3000, 15_000]) {
    const f = await failover(leaseMs);
    console.log(
      `fail-over, lease ${f.leaseMs} ms: the agent answered again ${f.ms.toFixed(0)} ms after kill -9 of its owner (${(f.ms / f.leaseMs).toFixed(2)}x the lease; ${f.attempts} tries)`,
    );
  }
  console.log(`load after: ${load()}`);
} finally {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  cluster.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}
