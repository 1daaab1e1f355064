// Makes sure a Docker engine answers. Order: whatever DOCKER_HOST or the default socket reaches;
// otherwise, as root on Debian, install Debian's docker.io and start
// `dockerd --bridge=none --iptables=false` in the background with its log in the data folder;
// otherwise stop with a message saying what to install. An engine it starts itself gets gVisor's
// runsc registered (runsc.ts) when runsc is there and no /etc/docker/daemon.json says otherwise;
// an engine that already answers is never restarted or reconfigured (others may share it).

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { type EngineVersion, socketVersion } from './engine-socket.ts';
import { log, run, which } from './exec.ts';
import { runscDaemonConfig } from './runsc.ts';

export interface EngineInfo {
  version: string;
  apiVersion: string;
  runc: string | undefined;
  started: boolean;
}

const ping = async (docker: Docker): Promise<boolean> => {
  try {
    await docker.ping({ abortSignal: AbortSignal.timeout(3000) } as never);
    return true;
  } catch {
    return false;
  }
};

const infoOf = (version: EngineVersion, started: boolean): EngineInfo => {
  const runc = version.Components?.find((c) => c.Name === 'runc')?.Version;
  return { version: version.Version, apiVersion: version.ApiVersion, runc, started };
};

const describe = async (docker: Docker, started: boolean): Promise<EngineInfo> =>
  infoOf(await docker.version(), started);

/** dockerode's client for DOCKER_HOST, imported when first needed (engine-socket.ts says why). */
export const dockerClient = async (): Promise<Docker> => new (await import('dockerode')).default();

export const engineAnswers = async (docker?: Docker): Promise<boolean> =>
  ping(docker ?? (await dockerClient()));

export const ensureDockerEngine = async (dataDir: string, client?: Docker): Promise<EngineInfo> => {
  // An engine that answers on its socket (every warm start): no dockerode.
  const answered = client === undefined ? await socketVersion() : undefined;
  if (answered !== undefined) return infoOf(answered, false);
  const docker = client ?? (await dockerClient());
  if (await ping(docker)) return describe(docker, false);
  if (process.env.DOCKER_HOST) {
    throw new Error(
      `no Docker engine answers at DOCKER_HOST=${process.env.DOCKER_HOST}; start it or unset DOCKER_HOST`,
    );
  }
  const isRoot = process.getuid?.() === 0;
  if (!isRoot || !existsSync('/etc/debian_version')) {
    throw new Error(
      'no Docker engine answers on /var/run/docker.sock; install and start Docker (https is not needed: any engine >= 20.10), or set DOCKER_HOST',
    );
  }
  if (!(await which('dockerd'))) {
    log('no Docker engine: installing Debian docker.io (one time, about a minute) ...');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    await run('apt-get', ['update', '-qq'], { env, inherit: true });
    const install = await run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'docker.io'], {
      env,
      inherit: true,
    });
    if (install.code !== 0)
      throw new Error('apt-get install docker.io failed; install a Docker engine by hand');
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const logFile = join(dataDir, 'dockerd.log');
  const args = ['--bridge=none', '--iptables=false', ...(await runscConfig(dataDir))];
  log(`starting dockerd ${args.join(' ')} (log: ${logFile})`);
  const out = openSync(logFile, 'a');
  const child = spawn('dockerd', args, {
    detached: true,
    stdio: ['ignore', out, out],
  });
  child.unref();
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (await ping(docker)) return describe(docker, true);
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`dockerd did not answer within 60 s; see ${logFile}`);
};

/**
 * `--config-file` of a daemon.json (in the data folder) that registers runsc, for an engine setup
 * starts: none without runsc, or where /etc/docker/daemon.json exists (the operator's, which a
 * config file of ours would replace: add runsc there, README "Deploying with gVisor").
 */
const runscConfig = async (dataDir: string): Promise<string[]> => {
  const runsc = await which('runsc');
  if (runsc === undefined) return [];
  if (existsSync('/etc/docker/daemon.json')) {
    log('runsc is not registered with the engine: /etc/docker/daemon.json exists; add runsc there (README)');
    return [];
  }
  const file = join(dataDir, 'dockerd.json');
  writeFileSync(file, `${JSON.stringify(runscDaemonConfig(runsc), null, 2)}\n`, { mode: 0o600 });
  return ['--config-file', file];
};
