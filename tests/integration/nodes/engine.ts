// A second, private Docker engine for node tests: its own dockerd (data root, exec root, pidfile,
// socket and an empty config file, all in a temporary folder; no bridge, no iptables), with the
// sandbox image copied in from the main engine (docker save | docker load). stop() ends that
// dockerd by its pid (its containers with it) and removes its folder.
// Invariant: nothing of the main engine is touched but reading its copy of the image.

import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Docker from 'dockerode';
import { until } from '../../helpers/until.ts';

const run = promisify(execFile);

export interface Engine {
  /** `unix://…/d.sock` */
  host: string;
  docker: Docker;
  dir: string;
  /** Ends the dockerd (SIGTERM, then SIGKILL) and removes its folder. */
  stop(): Promise<void>;
}

export async function startEngine(image: string): Promise<Engine> {
  // Short: the exec root holds containerd's socket, and a unix socket path has 107 bytes.
  const dir = mkdtempSync('/tmp/dshe-');
  const socket = join(dir, 'd.sock');
  writeFileSync(join(dir, 'daemon.json'), '{}');
  const log = openSync(join(dir, 'dockerd.log'), 'a');
  const child: ChildProcess = spawn(
    'dockerd',
    [
      '--data-root',
      join(dir, 'data'),
      '--exec-root',
      join(dir, 'x'),
      '--pidfile',
      join(dir, 'dockerd.pid'),
      '--config-file',
      join(dir, 'daemon.json'),
      '-H',
      `unix://${socket}`,
      '--bridge=none',
      '--iptables=false',
    ],
    { stdio: ['ignore', log, log] },
  );
  let exited = false;
  const gone = new Promise<void>((resolve) => {
    child.once('exit', () => {
      exited = true;
      resolve();
    });
  });
  const host = `unix://${socket}`;
  const docker = new Docker({ socketPath: socket });
  const stop = async (): Promise<void> => {
    if (!exited && child.pid !== undefined) {
      process.kill(child.pid, 'SIGTERM');
      const killed = await Promise.race([
        gone.then(() => true),
        new Promise((r) => setTimeout(r, 30_000, false)),
      ]);
      if (!killed && !exited) {
        process.kill(child.pid, 'SIGKILL');
        await gone;
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until(
      async () => {
        if (exited)
          throw new Error(`dockerd exited:\n${readFileSync(join(dir, 'dockerd.log'), 'utf8').slice(-2000)}`);
        return docker.ping().then(
          () => true,
          () => false,
        );
      },
      { what: 'the second dockerd to answer', timeoutMs: 60_000, intervalMs: 200 },
    );
    await run('sh', ['-c', 'docker save "$1" | docker -H "$2" load', 'load', image, host], {
      maxBuffer: 1024 * 1024,
    });
    return { host, docker, dir, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
