// `npm run doctor`: one line per prerequisite, ok or missing with the fix. Changes nothing.

import { accessSync, constants, existsSync } from 'node:fs';
import Docker from 'dockerode';
import { loadConfig } from '../../host/config.ts';
import { run, which } from './exec.ts';
import { imageInputs } from './image.ts';
import { storeCheck } from './store-check.ts';

interface Check {
  name: string;
  run: () => Promise<string>;
  fix: string;
}

const docker = new Docker();

const checks: Check[] = [
  {
    name: 'node',
    fix: 'run any npm script: scripts/run.sh fetches Node 24 into .tools/node',
    run: async () => {
      const major = Number(process.versions.node.split('.')[0]);
      if (major < 24) throw new Error(`Node ${process.version} is older than 24`);
      return process.version;
    },
  },
  {
    name: 'isolated-vm',
    fix: 'npm ci with Node 24 on PATH (package.json allowScripts lets its install script run)',
    run: async () => {
      const probe =
        "const ivm=require('isolated-vm');const i=new ivm.Isolate({memoryLimit:8});process.stdout.write(String(i.compileScriptSync('6*7').runSync(i.createContextSync())))";
      const result = await run(process.execPath, ['--no-node-snapshot', '-e', probe], { timeoutMs: 15_000 });
      if (result.stdout !== '42') throw new Error(result.stderr.trim().split('\n').pop() ?? 'does not load');
      return 'loads (--no-node-snapshot)';
    },
  },
  {
    name: 'esbuild',
    fix: 'npm ci',
    run: async () => {
      const esbuild = await import('esbuild');
      await esbuild.transform('const x: number = 1', { loader: 'ts' });
      return esbuild.version;
    },
  },
  {
    name: 'libsql',
    fix: 'npm ci',
    run: async () => {
      const { default: Database } = await import('libsql');
      const db = new Database(':memory:');
      const row = db.prepare('select sqlite_version() as v').all()[0] as { v: string };
      db.close();
      return `sqlite ${row.v}`;
    },
  },
  {
    name: 'store',
    fix: 'DSH_DB: a writable libsql file, or a postgres:// URL the server accepts (docs/configuration.md, "The store on PostgreSQL")',
    run: () => storeCheck(loadConfig().database),
  },
  {
    name: 'docker engine',
    fix: 'npm run setup (installs docker.io and starts dockerd where it can), or start Docker / set DOCKER_HOST',
    run: async () => {
      const version = await docker.version();
      const runc = version.Components?.find((c) => c.Name === 'runc')?.Version ?? 'unknown';
      return `${version.Version} (API ${version.ApiVersion}), runc ${runc}`;
    },
  },
  {
    name: 'sandbox image',
    fix: 'npm run setup (builds Dockerfile.sandbox)',
    run: async () => {
      const { tag } = await imageInputs();
      await docker.getImage(tag).inspect();
      return tag;
    },
  },
  {
    // Optional: runc alone is a working service; the line says why gvisor is not offered.
    name: 'sandbox runtimes',
    fix: 'see the docker engine line',
    run: async () => {
      const { gvisorRuntime } = loadConfig();
      const { runtimeCatalog } = await import('../../host/sandbox/docker/runtimes.ts');
      const offered = await runtimeCatalog(docker, { gvisor: gvisorRuntime }).offered();
      if (offered.includes('gvisor')) return `${offered.join(', ')} (gvisor: the engine's ${gvisorRuntime})`;
      const why = (await which('runsc'))
        ? `runsc is installed but the engine has no runtime "${gvisorRuntime}" (README, "Deploying with gVisor")`
        : 'runsc is not installed (npm run setup installs it)';
      return `${offered.join(', ')} only; gvisor: ${why}`;
    },
  },
  {
    name: 'workspace disk limit',
    fix: 'run as root with loop devices, mkfs.ext4 (e2fsprogs) and a local engine, or set DSH_DISK_QUOTA=off (no disk limit)',
    run: async () => {
      const config = loadConfig();
      if (!config.diskQuota) return 'off (DSH_DISK_QUOTA=off): workspaces have no disk limit';
      const { loopUnavailable } = await import('../../host/sandbox/docker/index.ts');
      const why = await loopUnavailable();
      if (why !== undefined) throw new Error(why);
      return `a ${config.workspaceMb} MiB ext4 file system per workspace in ${config.workspacesDir}`;
    },
  },
  {
    name: 'data directory',
    fix: 'set DSH_DATA_DIR to a writable folder',
    run: async () => {
      const { dataDir } = loadConfig();
      if (!existsSync(dataDir)) return `${dataDir} (created on first start)`;
      accessSync(dataDir, constants.W_OK);
      return dataDir;
    },
  },
];

export const doctor = async (): Promise<boolean> => {
  let healthy = true;
  for (const check of checks) {
    try {
      const detail = await check.run();
      process.stdout.write(`ok       ${check.name.padEnd(15)} ${detail}\n`);
    } catch (error) {
      healthy = false;
      const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
      process.stdout.write(`missing  ${check.name.padEnd(15)} ${reason} -> fix: ${check.fix}\n`);
    }
  }
  return healthy;
};
