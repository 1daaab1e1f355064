// The floor of a sandbox call without the service around it, for bench/http-latency.ts: a sandbox
// of the same image made by the docker provider in the bench's own process, its sandboxd reached
// over a link socket as the service reaches an agent's, and its calls made directly: no HTTP, no
// pipeline, no log, no isolate. A read of 1 KiB, `exec true`, and 20 reads in sequence: what the
// service's rows cost above these (and the HTTP floor's hop) is the service's own work.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { createDockerProvider } from '../../host/sandbox/docker/index.ts';
import { benchRunId, removeBenchResources } from './sweep.ts';

export interface LinkFloor {
  read(): Promise<unknown>;
  exec(): Promise<unknown>;
  /** `n` reads of 1 KiB in sequence. */
  reads(n: number): Promise<void>;
  stop(): Promise<void>;
}

export async function startLinkFloor(docker: Docker, image: string): Promise<LinkFloor> {
  const run = benchRunId();
  const dir = mkdtempSync(join(tmpdir(), 'dsh-bench-link-floor-'));
  const provider = createDockerProvider({
    docker,
    image,
    prefix: 'dshbench',
    instance: `f${run}`,
    labels: { 'dsh.bench': run },
    idleMs: 0,
    links: join(dir, 'links'),
  });
  const stop = async (): Promise<void> => {
    await provider.close().catch(() => undefined);
    await removeBenchResources(docker, run);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const sandbox = await provider.create({ agentId: 'floor', tenantId: 'bench' });
    await sandbox.fs.writeFile('bench.txt', Buffer.alloc(1024, 'x'));
    const read = () => sandbox.fs.readFile('bench.txt');
    return {
      read,
      exec: () => sandbox.exec('true'),
      async reads(n) {
        for (let i = 0; i < n; i++) await read();
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
