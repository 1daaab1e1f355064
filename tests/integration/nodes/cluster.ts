// Node agents for the node tests: `host/cli.ts node` started on a private engine (./engine.ts) with
// a certificate of the test's CA, on loopback; kill() ends it as a lost machine would (SIGKILL:
// its sockets reset), restart() starts it again on the same port, engine and data folder (a node
// agent that comes back), stop() ends it with SIGTERM (restart() starts it again after), and says how
// it exited; output() is what it printed since it last started. Its workspaces are Docker volumes
// unless `loop` is asked (loop workspaces under its data folder: root, loop devices and a local
// engine, as ../sandbox/fixtures.ts `loopWorkspaces` says). controlPlaneConfig() is the
// configuration every node test starts its control planes with, and certifyControlPlane() makes the
// control certificate naming its instance (a node serves a control plane only for those).
// Invariant: only processes started here are signalled, by their pid.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { type Config, loadConfig } from '../../../host/config.ts';
import { connectStore } from '../../../host/store/connect.ts';
import { makeControlCert } from '../../../scripts/node-certs.ts';
import { sandboxImage } from '../sandbox/fixtures.ts';
import type { Engine } from './engine.ts';

export interface NodeAgent {
  /** `https://127.0.0.1:<port>`, the same across restarts. */
  url: string;
  kill(): Promise<void>;
  restart(): Promise<void>;
  /** SIGTERM, then its exit: the code, or the signal that ended it. */
  stop(): Promise<number | NodeJS.Signals | null>;
  output(): string;
}

/** One `host/cli.ts node` process; resolves with it and the URL it prints. */
const spawnAgent = (
  ca: string,
  name: string,
  engine: Engine,
  listen: string,
  loop: boolean,
): Promise<{ child: ChildProcess; url: string; output: () => string }> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--no-node-snapshot', 'host/cli.ts', 'node'], {
      env: {
        ...process.env,
        DOCKER_HOST: engine.host,
        DSH_NODE_LISTEN: listen,
        DSH_NODE_CERT: join(ca, `${name}.pem`),
        DSH_NODE_KEY: join(ca, `${name}.key`),
        DSH_NODE_CA: join(ca, 'ca.pem'),
        DSH_DATA_DIR: join(engine.dir, 'node-data'),
        DSH_SANDBOX_IMAGE: sandboxImage(),
        DSH_DISK_QUOTA: loop ? 'on' : 'off',
        ...(loop ? { DSH_WORKSPACE_SPARES: '0' } : {}),
        DSH_POOL_SIZE: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stderr?.on('data', (c: Buffer) => {
      err += c.toString();
    });
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /^listening (https:\/\/\S+)$/m.exec(out);
      if (m?.[1]) resolve({ child, url: m[1], output: () => out });
    });
    child.once('exit', (code) => reject(new Error(`the node agent exited (${code}):\n${out}\n${err}`)));
  });

const alive = (child: ChildProcess): boolean =>
  child.pid !== undefined && child.exitCode === null && child.signalCode === null;

const end = async (child: ChildProcess, signal: NodeJS.Signals): Promise<number | NodeJS.Signals | null> => {
  if (!alive(child)) return child.exitCode ?? child.signalCode;
  const exited = new Promise<number | NodeJS.Signals | null>((r) =>
    child.once('exit', (code, by) => r(code ?? by)),
  );
  process.kill(child.pid as number, signal);
  return exited;
};

/** A node agent named `name` (its certificate `<ca>/<name>.pem`) on `engine`. */
export async function startNodeAgent(
  ca: string,
  name: string,
  engine: Engine,
  options: { loop?: boolean } = {},
): Promise<NodeAgent> {
  const loop = options.loop === true;
  let { child, url, output } = await spawnAgent(ca, name, engine, '127.0.0.1:0', loop);
  const port = new URL(url).port;
  return {
    url,
    kill: async () => {
      await end(child, 'SIGKILL');
    },
    async restart() {
      await end(child, 'SIGKILL');
      ({ child, url, output } = await spawnAgent(ca, name, engine, `127.0.0.1:${port}`, loop));
    },
    stop: () => end(child, 'SIGTERM'),
    output: () => output(),
  };
}

/**
 * A control plane's configuration for the node tests: on loopback (any port), its data in
 * `dataDir`, no local pool, one isolate worker, the test's sandbox image, its sandboxes on `nodes`
 * with the control certificate of `ca` (`<ca>/control.pem`, `control.key`, `ca.pem`); `more` on
 * top, and `env` as the environment loadConfig reads (none of the process's).
 */
export const controlPlaneConfig = (
  ca: string,
  dataDir: string,
  nodes: Array<{ name: string; url: string }>,
  more: Partial<Config> = {},
  env: NodeJS.ProcessEnv = {},
): Config =>
  loadConfig(
    {
      host: '127.0.0.1',
      port: 0,
      dataDir,
      poolSize: 0,
      isolateWorkers: 1,
      sandboxImage: sandboxImage(),
      nodes,
      nodeCert: join(ca, 'control.pem'),
      nodeKey: join(ca, 'control.key'),
      nodeCa: join(ca, 'ca.pem'),
      ...more,
    },
    env,
  );

/** Every instance certified on each CA folder so far: a control plane started before starts again. */
const certified = new Map<string, Set<string>>();

/**
 * Makes `<ca>/control.pem` (and `.key`) a control plane's certificate naming the instance of
 * `config`'s store (made here when new), as an operator does with `dsh-sandbox nodes instance` and
 * scripts/node-certs.ts, and every instance certified on `ca` before, and `also`; the instance.
 */
export async function certifyControlPlane(ca: string, config: Config, also: string[] = []): Promise<string> {
  const store = await connectStore({
    database: config.database,
    dataDir: config.dataDir,
    ...(config.secretsKey === undefined ? {} : { secretsKey: config.secretsKey }),
  });
  const instance = store.instanceId;
  await store.close();
  const named = certified.get(ca) ?? new Set<string>();
  for (const i of [instance, ...also]) named.add(i);
  certified.set(ca, named);
  makeControlCert(ca, ca, 'control', [...named]);
  return instance;
}
