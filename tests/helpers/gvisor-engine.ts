// A private second Docker engine with gVisor's runsc registered, for the suites that run under
// runtime gvisor: its own data root, exec root, pid file and socket in a temporary folder,
// `--bridge=none --iptables=false` (it touches no host network), runsc registered with the
// arguments setup gives it (scripts/setup/runsc.ts). The sandbox image is built locally, so it is
// copied in from the main engine (docker save | docker load). The machine's main engine is never
// stopped or reconfigured.
// Invariants: stop() ends only the dockerd this started (by its pid), waits for it, then the
// processes it left that name its folder (a failed start's shim), unmounts what it left under its
// folder and removes the folder; a start that fails stops what it started.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Docker from 'dockerode';
import { RUNSC_ARGS } from '../../scripts/setup/runsc.ts';
import { until } from './until.ts';

export interface PrivateEngine {
  docker: Docker;
  /** unix://… of its socket. */
  host: string;
  dir: string;
  pid: number;
  stop(): Promise<void>;
}

const onPath = (name: string): string | undefined =>
  (process.env.PATH ?? '')
    .split(':')
    .map((dir) => join(dir, name))
    .find((file) => existsSync(file));

/** Why no private gVisor engine can run here, or undefined when one can. */
export const gvisorEngineUnavailable = (): string | undefined => {
  if (process.getuid?.() !== 0) return 'a second dockerd needs root';
  if (onPath('dockerd') === undefined) return 'no dockerd on PATH (npm run setup installs docker.io)';
  if (onPath('runsc') === undefined) return 'no runsc on PATH (npm run setup installs Debian runsc)';
  return undefined;
};

const ping = (docker: Docker): Promise<boolean> =>
  docker.ping().then(
    () => true,
    () => false,
  );

/** Starts the private engine and loads `image` into it from the main engine. */
export async function startGvisorEngine(image: string, main = new Docker()): Promise<PrivateEngine> {
  const runsc = onPath('runsc') as string;
  // Short: the socket path must fit a unix socket address.
  const dir = mkdtempSync('/tmp/dshgv-');
  const socket = join(dir, 'docker.sock');
  const config = join(dir, 'daemon.json');
  writeFileSync(config, JSON.stringify({ runtimes: { runsc: { path: runsc, runtimeArgs: RUNSC_ARGS } } }));
  const out = openSync(join(dir, 'dockerd.log'), 'a');
  const child: ChildProcess = spawn(
    'dockerd',
    [
      '--config-file',
      config,
      '--data-root',
      join(dir, 'data'),
      '--exec-root',
      join(dir, 'exec'),
      '--pidfile',
      join(dir, 'docker.pid'),
      '--host',
      `unix://${socket}`,
      '--bridge=none',
      '--iptables=false',
      '--ip-masq=false',
    ],
    { stdio: ['ignore', out, out] },
  );
  const pid = child.pid as number;
  const docker = new Docker({ socketPath: socket });
  const engine: PrivateEngine = { docker, host: `unix://${socket}`, dir, pid, stop: () => stop(child, dir) };
  try {
    await until(async () => child.exitCode !== null || (await ping(docker)), {
      what: 'the private dockerd to answer',
      timeoutMs: 60_000,
      intervalMs: 100,
    });
    if (child.exitCode !== null) throw new Error(`dockerd exited: ${tail(dir)}`);
    await copyImage(main, docker, image);
    return engine;
  } catch (e) {
    await engine.stop();
    throw e;
  }
}

async function copyImage(from: Docker, to: Docker, image: string): Promise<void> {
  const saved = await from.getImage(image).get();
  const loading = await to.loadImage(saved, { quiet: true });
  await new Promise<void>((resolve, reject) =>
    to.modem.followProgress(loading, (error: Error | null) => (error ? reject(error) : resolve())),
  );
  await to.getImage(image).inspect();
}

function tail(dir: string): string {
  try {
    return readFileSync(join(dir, 'dockerd.log'), 'utf8').split('\n').slice(-5).join(' | ');
  } catch {
    return '(no log)';
  }
}

/** Ends the dockerd by its pid, waits for it, unmounts what it left in `dir`, removes `dir`. */
async function stop(child: ChildProcess, dir: string): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const late = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(late);
  }
  // A container whose start failed can leave its shim (and runsc's processes) behind dockerd:
  // every process whose command line names this folder is this engine's.
  for (const pid of processesUnder(dir)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
  const mounts = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[1] ?? '')
    .filter((target) => target.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
  for (const target of mounts)
    await new Promise((resolve) => spawn('umount', ['-l', target], { stdio: 'ignore' }).on('exit', resolve));
  rmSync(dir, { recursive: true, force: true });
}

/** Pids of the processes whose command line names a path in `dir`. */
function processesUnder(dir: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(`${dir}/`);
      } catch {
        return false;
      }
    })
    .map(Number);
}
