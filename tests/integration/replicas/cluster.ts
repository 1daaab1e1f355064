// Replicas for integration tests: several `serve` processes (serve-replica.ts) on one fresh
// PostgreSQL database of the run's private cluster, with one secrets key, each with its own data
// directory and replica id, and a short lease so a fail-over takes seconds, each with a warm pool
// of `poolSize` on the one engine. The first replica makes the default tenant; the others start
// after it. Everything is stopped and swept in close().
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createDatabase, type TestDatabase } from '../../helpers/postgres.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { dockerFixture } from '../sandbox/fixtures.ts';

const CHILD = fileURLToPath(new URL('./serve-replica.ts', import.meta.url));

export interface Replica {
  id: string;
  child: ChildProcess;
  url: string;
  lines: string[];
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
    const child = spawn(process.execPath, [CHILD, JSON.stringify(options)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    const lines: string[] = [];
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const url = await new Promise<string>((resolve, reject) => {
      let buffer = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        buffer += chunk.toString();
        for (let end = buffer.indexOf('\n'); end >= 0; end = buffer.indexOf('\n')) {
          const line = buffer.slice(0, end);
          buffer = buffer.slice(end + 1);
          lines.push(line);
          if (line.startsWith('listening ')) resolve(line.slice('listening '.length));
        }
      });
      child.once('exit', (code, signal) =>
        reject(
          new Error(
            `replica ${id} exited (${code ?? signal}) before serving:\n${lines.join('\n')}\n${stderr}`,
          ),
        ),
      );
    });
    return { id, child, url, lines };
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
