#!/usr/bin/env -S node --no-node-snapshot
// The command line: `serve` (the control plane) and `tenant create`. `npm start` runs `serve` after
// scripts/run.sh prepared Node 24, the Docker engine and the sandbox image (and passes its tag in
// DSH_SANDBOX_IMAGE); the prerequisites' check is `npm run doctor` (scripts/, which may import host,
// never the reverse).

import { parseArgs } from 'node:util';
import { loadConfig, portFrom, unknownSettings } from './config.ts';

const HELP = `usage: dsh-sandbox <command> [options]

commands:
  serve                 run the control plane (HTTP API on loopback by default)
  tenant create <name>  create a tenant and print its API key once

options:
  --host <addr>         listen address (env DSH_HOST, default 127.0.0.1)
  --port <n>            port (env DSH_PORT, default 7070; 0 picks a free one)
  --data-dir <dir>      data directory (env DSH_DATA_DIR, default ./.data)
  -h, --help            this text

environment (serve):
  DSH_ADMIN_KEY           bearer key of the admin routes, 24+ characters (unset: tenants only via the CLI)
  DSH_METRICS_KEY         bearer key of GET /metrics only, 24+ characters (unset, and no admin key: /metrics off)
  DSH_AUTH_FAILURES       failed key attempts per client address and window; then 429 (default 10)
  DSH_AUTH_FAILURE_WINDOW_MS  that window, from the first failure (default 60000)
  DSH_TRUSTED_PROXIES     proxies (ip or ip/prefix, comma-separated) whose X-Forwarded-For is believed
  DSH_SANDBOX_IMAGE       sandbox image tag (required; npm start passes the one it built)
  DSH_POOL_SIZE           warm containers kept ready (default 2)
  DSH_ISOLATE_WORKERS     isolate worker processes for run_code (default 2)
  DSH_ISOLATE_WORKER_MB   resident memory of one isolate worker; bounds its programs (default 1024)
  DSH_TENANT_CONCURRENCY  requests of one tenant in flight; more answer 429 (default 16)
  DSH_MAX_UPLOAD_BYTES    largest file/archive upload (default 67108864)
  DSH_CALL_TIMEOUT_MS     deadline of one call batch (default 600000)
  DSH_SHUTDOWN_GRACE_MS   how long shutdown lets running calls finish (default 10000)
  DSH_MAX_CONNECTIONS     open HTTP connections at once (default 1024)
  DSH_CONNECTION_RESERVE  connections kept for clients with a valid key (default 64)
  DSH_TENANT_CONNECTIONS  open connections of one tenant (default 128)
  DSH_TENANT_TERMINALS    terminal WebSockets of one tenant (default 32)
  DSH_SCHEDULES_PER_AGENT schedules one agent may have (default 32)
  DSH_SCHEDULE_MIN_SECONDS  shortest period of a recurring schedule (default 60)
  DSH_SKILLS_PER_TENANT   skills one tenant's catalog may hold (default 256)
  DSH_SKILL_MAX_BYTES     bytes of all files of one skill package (default 4194304)
  DSH_FIRST_BYTE_TIMEOUT_MS  a silent new connection is closed after this (default 5000)
  DSH_HEADERS_TIMEOUT_MS  time to send a request head (default 10000)
  DSH_KEEP_ALIVE_TIMEOUT_MS  idle keep-alive connections close after this (default 5000)
  DSH_DISK_QUOTA          on: each workspace is its own size-limited file system (default on;
                          needs root and a local engine); off: Docker volumes, no disk limit
  DSH_WORKSPACES_DIR      workspace images and mount points (default <data-dir>/workspaces)
  DSH_WORKSPACE_MB        default workspace size in MiB (default 1024)
  DSH_WORKSPACE_SPARES    workspaces of the default size made ahead (default 2)
  DSH_SPOOL_DIR           where archive uploads wait while checked (default <data-dir>/spool)
  DSH_DISK_OVERCOMMIT     how far workspace limits may exceed the free host disk (default 1: none)
  DSH_DISK_RESERVE_MB     host disk kept free beyond what workspaces may still take (default 1024)
  DSH_CHILDREN_PER_AGENT  children and teammates one agent may have (default 16)
  DSH_CHILD_DEPTH         how deep child agents may nest (default 3)
  DSH_CONCURRENT_CHILDREN children of one agent running at once (default 8)
  DSH_MAILBOX_SIZE        unread messages one mailbox may hold (default 256)
  DSH_MESSAGE_BYTES       bytes of one message, report or child prompt (default 65536)
  DSH_SUBAGENT_PROVIDERS  provider bundles with a subagent_<name> alias, e.g. codex,claude_code
`;

const main = async (argv: string[]): Promise<number> => {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      host: { type: 'string' },
      port: { type: 'string' },
      'data-dir': { type: 'string' },
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
          `dsh-sandbox: warning: ${unknown.join(', ')} ${unknown.length === 1 ? 'is' : 'are'} set but no setting of the service (a typo?); see the README's configuration table\n`,
        );
      const { serve } = await import('./serve.ts');
      await serve(config);
      return 0;
    }
    case 'tenant': {
      if (rest[0] !== 'create' || !rest[1]) {
        process.stderr.write('usage: dsh-sandbox tenant create <name>\n');
        return 2;
      }
      const { openStore } = await import('./store/index.ts');
      const store = openStore({ path: config.database });
      try {
        const tenant = store.tenants.createTenant(rest[1]);
        process.stdout.write(`${JSON.stringify(tenant)}\n`);
      } finally {
        store.close();
      }
      return 0;
    }
    default:
      process.stderr.write(`unknown command "${command}"\n${HELP}`);
      return 2;
  }
};

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`dsh-sandbox: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
