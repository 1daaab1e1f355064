#!/bin/sh
':' //; n=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null); [ "${n:-0}" -ge 24 ] 2>/dev/null || { echo "dsh-sandbox: needs Node.js 24 or later, and node on PATH is $(node --version 2>/dev/null || echo missing); install Node.js 24, or run npm start, which fetches it" >&2; exit 1; }; exec node "$0" "$@"
// The command line: `serve` (the control plane), `node` (a node agent: serve-node.ts), the admin
// commands `tenants`, `keys`, `nodes` and `retention` (cli-admin.ts; `tenant create` is the older
// spelling of `tenants create`), `backup`, `restore` and `verify` (cli-backup.ts) and `doctor`.
// `npm start` runs `serve` after scripts/run.sh prepared Node 24, the Docker engine and the sandbox
// image (and passes its tag in DSH_SANDBOX_IMAGE). Run as a program (`./host/cli.ts`, the package's
// bin), the file is first read by sh (line 2, a string and a comment to JavaScript): an older Node
// on PATH gets one line saying what to do instead of a loader error on the .ts extension. `doctor`
// runs the prerequisites' check of scripts/ in a process of its own (scripts may import host,
// never the reverse).

import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { enableCompileCache } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ADMIN_USAGE, runAdmin } from './cli-admin.ts';
import { BACKUP_USAGE, runBackup } from './cli-backup.ts';
import { NODE_USAGE, runNodeCommand } from './cli-node.ts';
import { loadConfig, portFrom, unknownSettings } from './config.ts';
import { deferRarelyUsedModules } from './deferred-modules.ts';
import { isSandboxError } from './errors.ts';
import { settingsHelp } from './settings-text.ts';

const HELP = `usage: dsh-sandbox <command> [options]

commands:
  serve                 run the control plane (HTTP API on loopback by default)
  node                  run a node agent: this machine's sandboxes, served to control planes
                        (DSH_NODE_LISTEN, DSH_NODE_CERT/KEY/CA; docs/nodes.md)
${NODE_USAGE}
${ADMIN_USAGE}
${BACKUP_USAGE}
  doctor                             check the prerequisites (Node, Docker, the sandbox image, ...); same as npm run doctor

options:
  --host <addr>         listen address (env DSH_HOST, default 127.0.0.1)
  --port <n>            port (env DSH_PORT, default 7070; 0 picks a free one)
  --data-dir <dir>      data directory (env DSH_DATA_DIR, default ./.data)
  --name, --expires-at  of a new key (keys create)
  --agents <n|none>     a tenant's agent quota (tenants limits)
  --disk-mb <n|none>    a tenant's workspace quota in MiB (tenants limits)
  --log-bytes <n|none>  a tenant's durable-log budget in bytes (tenants limits)
  --plugins <n|none>    a tenant's running-plugin cap (tenants limits)
  --checkpoint-bytes <n|none>  a tenant's checkpoint bytes, all its agents together (tenants limits)
  -h, --help            this text

settings (serve), from the environment; docs/configuration.md says more of each:
${settingsHelp()}`;

/** `npm run doctor`'s check (scripts/main.ts) under this Node; its exit code. */
const doctor = (): Promise<number> =>
  new Promise((resolve) => {
    const main = fileURLToPath(new URL('../scripts/main.ts', import.meta.url));
    const child = spawn(process.execPath, ['--no-node-snapshot', main, 'doctor'], { stdio: 'inherit' });
    child.once('error', () => resolve(1));
    child.once('exit', (code) => resolve(code ?? 1));
  });

const main = async (argv: string[]): Promise<number> => {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      host: { type: 'string' },
      port: { type: 'string' },
      'data-dir': { type: 'string' },
      name: { type: 'string' },
      'expires-at': { type: 'string' },
      agents: { type: 'string' },
      'disk-mb': { type: 'string' },
      'log-bytes': { type: 'string' },
      plugins: { type: 'string' },
      'checkpoint-bytes': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || positionals.length === 0) {
    process.stdout.write(HELP);
    return values.help ? 0 : 2;
  }
  const config = loadConfig({
    ...(values.host ? { host: values.host } : {}),
    ...(values.port !== undefined ? { port: portFrom('--port', values.port) } : {}),
    ...(values['data-dir'] ? { dataDir: values['data-dir'] } : {}),
  });
  const [command, ...rest] = positionals;
  switch (command) {
    case 'serve': {
      const unknown = unknownSettings();
      if (unknown.length > 0)
        process.stderr.write(
          `dsh-sandbox: warning: ${unknown.join(', ')} ${unknown.length === 1 ? 'is' : 'are'} set but no setting of the service (a typo?); see docs/configuration.md\n`,
        );
      // Node's compile cache, in the data directory (mode 0700, the operator's; made first so that
      // the cache does not make it with looser bits): a warm start reads the modules' type-stripped
      // source and V8 code from it instead of stripping and compiling them all again (about half the
      // CPU of loading the service). serve.ts flushes it once listening.
      mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
      enableCompileCache(join(config.dataDir, 'compile-cache'));
      deferRarelyUsedModules();
      const { serve } = await import('./serve.ts');
      await serve(config);
      return 0;
    }
    case 'node': {
      if (rest.length > 0) return runNodeCommand(config, rest);
      deferRarelyUsedModules();
      const { serveNodeAgent, untilSignalled } = await import('./serve-node.ts');
      await untilSignalled(await serveNodeAgent(config));
      // Whatever a close left behind (an engine call under way) holds the process a second at most.
      setTimeout(() => process.exit(0), 1000).unref();
      return 0;
    }
    case 'tenant': {
      if (rest[0] !== 'create' || !rest[1]) {
        process.stderr.write('usage: dsh-sandbox tenant create <name>\n');
        return 2;
      }
      const { connectStore } = await import('./store/connect.ts');
      const store = await connectStore({
        database: config.database,
        dataDir: config.dataDir,
        poolSize: config.databasePool,
        ...(config.secretsKey === undefined ? {} : { secretsKey: config.secretsKey }),
      });
      try {
        const tenant = await store.tenants.createTenant(rest[1]);
        process.stdout.write(`${JSON.stringify(tenant)}\n`);
      } finally {
        await store.close();
      }
      return 0;
    }
    case 'tenants':
    case 'keys':
    case 'nodes':
    case 'retention':
      return runAdmin(config, command, rest, {
        ...(values.name === undefined ? {} : { name: values.name }),
        ...(values['expires-at'] === undefined ? {} : { expiresAt: values['expires-at'] }),
        ...(values.agents === undefined ? {} : { agents: values.agents }),
        ...(values['disk-mb'] === undefined ? {} : { diskMb: values['disk-mb'] }),
        ...(values['log-bytes'] === undefined ? {} : { logBytes: values['log-bytes'] }),
        ...(values.plugins === undefined ? {} : { plugins: values.plugins }),
        ...(values['checkpoint-bytes'] === undefined ? {} : { checkpointBytes: values['checkpoint-bytes'] }),
      });
    case 'backup':
    case 'restore':
    case 'verify':
      return runBackup(config, command, rest);
    case 'doctor':
      return doctor();
    default:
      process.stderr.write(`unknown command "${command}"\n${HELP}`);
      return 2;
  }
};

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  // A SandboxError's stable code first, so that scripts can tell failures apart.
  const code = isSandboxError(error) ? `${error.code}: ` : '';
  process.stderr.write(`dsh-sandbox: ${code}${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
