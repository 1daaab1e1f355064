// A second, private Docker engine for node tests: its own dockerd (data root, exec root, pidfile,
// socket and an empty config file, all in a temporary folder; no bridge, no iptables), with the
// sandbox image copied in from the main engine (docker save | docker load). stop() ends that
// dockerd by its pid (its containers with it) and removes its folder; halt() ends it keeping the
// folder, and resume() starts it again on the same data (an engine stopped and started again).
// Given `runsc` (its path), the engine registers gVisor's runsc with the arguments setup gives it
// (scripts/setup/runsc.ts), so a node on it offers the gvisor runtime.
// Invariant: nothing of the main engine is touched but reading its copy of the image.

import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Docker from 'dockerode';
import { RUNSC_ARGS } from '../../../scripts/setup/runsc.ts';
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

/** An engine this module started, which can also be stopped and started again. */
export interface RestartableEngine extends Engine {
  /** Ends the dockerd (SIGTERM: its containers stop), keeping its data. */
  halt(): Promise<void>;
  /** Starts the dockerd again on the same data and socket; resolves when it answers. */
  resume(): Promise<void>;
}

/** One dockerd process on `dir`; `gone` settles when it exits. */
function spawnDockerd(
  dir: string,
  socket: string,
): { child: ChildProcess; gone: Promise<void>; exited: () => boolean } {
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
  return { child, gone, exited: () => exited };
}

export async function startEngine(
  image: string,
  options: { runsc?: string } = {},
): Promise<RestartableEngine> {
  // Short: the exec root holds containerd's socket, and a unix socket path has 107 bytes.
  const dir = mkdtempSync('/tmp/dshe-');
  const socket = join(dir, 'd.sock');
  const runtimes =
    options.runsc === undefined
      ? {}
      : { runtimes: { runsc: { path: options.runsc, runtimeArgs: RUNSC_ARGS } } };
  writeFileSync(join(dir, 'daemon.json'), JSON.stringify(runtimes));
  let daemon = spawnDockerd(dir, socket);
  const host = `unix://${socket}`;
  const docker = new Docker({ socketPath: socket });
  const halt = async (): Promise<void> => {
    const { child, gone, exited } = daemon;
    if (exited() || child.pid === undefined) return;
    process.kill(child.pid, 'SIGTERM');
    const ended = await Promise.race([
      gone.then(() => true),
      new Promise((r) => setTimeout(r, 30_000, false)),
    ]);
    if (!ended && !exited()) {
      process.kill(child.pid, 'SIGKILL');
      await gone;
    }
  };
  const stop = async (): Promise<void> => {
    await halt();
    rmSync(dir, { recursive: true, force: true });
  };
  const answers = () =>
    until(
      async () => {
        if (daemon.exited())
          throw new Error(`dockerd exited:\n${readFileSync(join(dir, 'dockerd.log'), 'utf8').slice(-2000)}`);
        return docker.ping().then(
          () => true,
          () => false,
        );
      },
      { what: 'the second dockerd to answer', timeoutMs: 60_000, intervalMs: 200 },
    );
  const resume = async (): Promise<void> => {
    if (!daemon.exited()) return;
    daemon = spawnDockerd(dir, socket);
    await answers();
  };
  try {
    await answers();
    await run('sh', ['-c', 'docker save "$1" | docker -H "$2" load', 'load', image, host], {
      maxBuffer: 1024 * 1024,
    });
    return { host, docker, dir, stop, halt, resume };
  } catch (e) {
    await stop();
    throw e;
  }
}
