// Runs on Node 24 after scripts/run.sh made sure of Node and the npm packages. One command each
// for the npm scripts: setup (Docker engine + sandbox image, and PostgreSQL's binaries for the
// tests), test, serve, doctor, bench.

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { enableCompileCache } from 'node:module';
import { join } from 'node:path';
import { loadConfig } from '../host/config.ts';
import { log } from './setup/exec.ts';

const ROOT = join(import.meta.dirname, '..');

// Node's compile cache for this launcher's own modules (the setup steps, dockerode, esbuild's API),
// in the data directory beside the service's (host/cli.ts), before they load: every `npm start`
// runs through here. Only this process: its children (tests, benches) do not inherit it. A
// configuration the service would refuse leaves it off (the command reports it).
try {
  const { dataDir } = loadConfig();
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  enableCompileCache(join(dataDir, 'compile-cache'));
} catch {
  // an invalid setting: the command that reads it says so
}
// What every command but doctor needs; doctor's and PostgreSQL's steps load with their commands.
const { ensureDockerEngine } = await import('./setup/docker-engine.ts');
const { ensureSandboxImage } = await import('./setup/image.ts');
const { ensureRunsc } = await import('./setup/runsc.ts');

/** Docker engine and sandbox image; returns the image tag. */
const setup = async (): Promise<string> => {
  const started = Date.now();
  const config = loadConfig();
  // Before the engine: an engine setup starts itself gets runsc registered (not fatal: runc only).
  const runsc = await ensureRunsc().catch((e: Error) => {
    log(`${e.message}; sandboxes run under runc only`);
    return undefined;
  });
  const engine = await ensureDockerEngine(config.dataDir);
  const image = await ensureSandboxImage();
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  log(
    `Docker ${engine.version}${engine.started ? ' (started)' : ''}${runsc ? '; runsc there' : ''}; sandbox image ${image.tag}${image.built ? ' (built)' : ''}; ready in ${seconds} s`,
  );
  return image.tag;
};

/**
 * PostgreSQL's server binaries for the tests' private cluster (installed from Debian when missing,
 * as the Docker engine is). Not fatal: without them the tests that need PostgreSQL skip, saying why.
 */
const setupPostgres = async (): Promise<void> => {
  try {
    const { ensurePostgres } = await import('./setup/postgres.ts');
    const { bin, installed } = await ensurePostgres();
    if (installed) log(`PostgreSQL installed (${bin})`);
  } catch (error) {
    log(`${(error as Error).message}; the tests that need PostgreSQL will be skipped`);
  }
};

/**
 * Runs a Node program under this Node. `--no-node-snapshot` (isolated-vm needs it) unless
 * `snapshot`: the service's own process never loads isolated-vm (its isolate and plugin workers
 * do, forked with the flag; tests/unit/architecture/walls.test.ts), and Node's startup snapshot
 * starts it ~50 ms sooner (`node -e 0`: 30 ms against 80 ms here).
 */
const runNode = (args: string[], env: NodeJS.ProcessEnv, { snapshot = false } = {}): Promise<number> =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, [...(snapshot ? [] : ['--no-node-snapshot']), ...args], {
      stdio: 'inherit',
      env,
      cwd: ROOT,
    });
    const forward = (signal: NodeJS.Signals) => child.kill(signal);
    process.on('SIGINT', forward);
    process.on('SIGTERM', forward);
    child.on('close', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });

const testEnv = (image: string | undefined): NodeJS.ProcessEnv => ({
  ...process.env,
  ...(image ? { DSH_SANDBOX_IMAGE: image } : {}),
  TESTCONTAINERS_RYUK_DISABLED: 'true',
  TESTCONTAINERS_HOST_OVERRIDE: process.env.TESTCONTAINERS_HOST_OVERRIDE ?? 'localhost',
});

/** The plain closing line any CI can read: `tests: N passed, N failed, N skipped`. */
const printSummary = (report: string): void => {
  if (!existsSync(report)) return;
  const r = JSON.parse(readFileSync(report, 'utf8')) as {
    numPassedTests: number;
    numFailedTests: number;
    numPendingTests: number;
    numTodoTests: number;
  };
  process.stdout.write(
    `\ntests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped\n`,
  );
};

const commands: Record<string, (args: string[]) => Promise<number>> = {
  async setup() {
    await setup();
    await setupPostgres();
    return 0;
  },
  async test(args) {
    // The whole suite (no filters) starts with the static checks: types and lint, seconds each.
    if (args.length === 0) {
      log('type-checking (tsc) and linting (biome) ...');
      const tscBin = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
      // The client package also on its own, with browser types and no Node types (client/tsconfig.json).
      const tsc =
        (await runNode([tscBin, '-p', 'tsconfig.json'], process.env)) ||
        (await runNode([tscBin, '-p', join('client', 'tsconfig.json')], process.env));
      const lint = await runNode(
        [join(ROOT, 'node_modules', '@biomejs', 'biome', 'bin', 'biome'), 'ci', '.'],
        process.env,
      );
      if (tsc !== 0 || lint !== 0) return 1;
    }
    const unitOnly = args.join(' ').includes('--project unit');
    const image = unitOnly ? undefined : await setup();
    await setupPostgres();
    const report = join(loadConfig().dataDir, 'vitest-report.json');
    rmSync(report, { force: true });
    const reporters = args.some((a) => a.startsWith('--reporter'))
      ? []
      : ['--reporter=default', '--reporter=json', `--outputFile.json=${report}`];
    const status = await runNode(
      [join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'), 'run', ...reporters, ...args],
      testEnv(image),
    );
    printSummary(report);
    return status;
  },
  async serve(args) {
    const image = await setup();
    return runNode(
      [join(ROOT, 'host', 'cli.ts'), 'serve', ...args],
      { ...process.env, DSH_SANDBOX_IMAGE: process.env.DSH_SANDBOX_IMAGE ?? image },
      { snapshot: true },
    );
  },
  async doctor() {
    const { doctor } = await import('./setup/doctor.ts');
    return (await doctor()) ? 0 : 1;
  },
  async bench(args) {
    const image = await setup();
    const names =
      args.length > 0
        ? args
        : readdirSync(join(ROOT, 'bench'))
            .filter((f) => f.endsWith('.ts'))
            .sort();
    let status = 0;
    for (const name of names) {
      log(`bench ${name}`);
      status ||= await runNode(
        [join(ROOT, 'bench', name.endsWith('.ts') ? name : `${name}.ts`)],
        testEnv(image),
      );
    }
    return status;
  },
};

const [command = 'help', ...rest] = process.argv.slice(2);
const handler = commands[command];
if (!handler) {
  process.stderr.write(`usage: npm run {setup|test|start|doctor|bench}\n`);
  process.exit(2);
}
try {
  process.exitCode = await handler(rest);
} catch (error) {
  log(error instanceof Error ? error.message : String(error));
  process.exitCode = 1;
}
