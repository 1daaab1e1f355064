// Replicas for integration tests: several `serve` processes (serve-replica.ts) on one fresh
// PostgreSQL database of the run's private cluster, with one secrets key, each with its own data
// directory and replica id, and a short lease so a fail-over takes seconds, each with a warm pool
// of `poolSize` on the one engine. The first replica makes the default tenant; the others start
// after it. Everything is stopped and swept in close().
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createDatabase, type TestDatabase } from '../../helpers/postgres.ts';
import { startServeProcess } from '../../helpers/serve-process.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { dockerFixture } from '../sandbox/fixtures.ts';

const CHILD = fileURLToPath(new URL('./serve-replica.ts', import.meta.url));

export interface Replica {
  id: string;
  child: ChildProcess;
  url: string;
  lines: string[];
  /** Its data directory (its checkpoints live under it). */
  dataDir: string;
}

export interface Cluster {
  database: TestDatabase;
  /** The docker fixture's run id: every container and volume of the replicas carries it (`dsh.test`). */
  runId: string;
  /** The default tenant's key (made by the first replica). */
  key: string;
  replicas: Replica[];
  /** Starts one more replica (or the same id again, after it died). */
  start(id: string): Promise<Replica>;
  request(
    replica: Replica,
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; json: Loose; headers: Headers }>;
  close(): Promise<void>;
}

export const exited = (child: ChildProcess): Promise<void> =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => child.once('exit', () => resolve()));

export async function startCluster(
  ids: readonly string[],
  leaseMs: number,
  { poolSize = 0 }: { poolSize?: number } = {},
): Promise<Cluster> {
  const fixture = dockerFixture();
  const database = await createDatabase();
  const secretsKey = randomBytes(32).toString('base64');
  const dirs: string[] = [];
  const children: ChildProcess[] = [];

  async function start(id: string): Promise<Replica> {
    const dataDir = mkdtempSync(join(tmpdir(), `dsh-replica-${id}-`));
    dirs.push(dataDir);
    const options = {
      dataDir,
      runId: fixture.runId,
      database: database.url,
      replicaId: id,
      secretsKey,
      leaseMs,
      poolSize,
    };
    const started = startServeProcess(CHILD, options, `replica ${id}`);
    started.catch((error: { child?: ChildProcess }) => error.child && children.push(error.child));
    const { child, url, lines } = await started;
    children.push(child);
    return { id, child, url, lines, dataDir };
  }

  const replicas: Replica[] = [];
  const first = await start(ids[0]!);
  replicas.push(first);
  const key = readFileSync(join(dirs[0]!, 'default-tenant.key'), 'utf8').trim();
  for (const id of ids.slice(1)) replicas.push(await start(id));

  return {
    database,
    runId: fixture.runId,
    key,
    replicas,
    start,
    async request(replica, method, path, body, headers = {}) {
      const res = await fetch(`${replica.url}${path}`, {
        method,
        headers: {
          Authorization: `Bearer ${key}`,
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
          ...headers,
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        // A request must not hang a test on a replica that was stopped: it fails, and is retried.
        signal: AbortSignal.timeout(60_000),
      });
      const text = await res.text();
      let json: Loose = {};
      try {
        json = JSON.parse(text) as Loose;
      } catch {
        json = { text };
      }
      return { status: res.status, json, headers: res.headers };
    },
    async close() {
      for (const child of children) {
        if (child.exitCode !== null || child.signalCode !== null) continue;
        if (child.signalCode === null) child.kill('SIGCONT');
        child.kill('SIGKILL');
      }
      await Promise.all(children.map(exited));
      await fixture.sweep();
      await database.drop();
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    },
  };
}
