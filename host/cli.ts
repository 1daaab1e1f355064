#!/usr/bin/env -S node --no-node-snapshot
// The command line: `serve` (the control plane), `node` (a node agent: serve-node.ts) and `tenant create`. `npm start` runs `serve` after
// scripts/run.sh prepared Node 24, the Docker engine and the sandbox image (and passes its tag in
// DSH_SANDBOX_IMAGE); the prerequisites' check is `npm run doctor` (scripts/, which may import host,
// never the reverse).

import { parseArgs } from 'node:util';
import { loadConfig, portFrom, unknownSettings } from './config.ts';
import { settingsHelp } from './settings-text.ts';

const HELP = `usage: dsh-sandbox <command> [options]

commands:
  serve                 run the control plane (HTTP API on loopback by default)
  tenant create <name>  create a tenant and print its API key once
  node                  run a node agent: this machine's sandboxes, served to control planes
                        (DSH_NODE_LISTEN, DSH_NODE_CERT/KEY/CA; docs/nodes.md)

options:
  --host <addr>         listen address (env DSH_HOST, default 127.0.0.1)
  --port <n>            port (env DSH_PORT, default 7070; 0 picks a free one)
  --data-dir <dir>      data directory (env DSH_DATA_DIR, default ./.data)
  -h, --help            this text

settings (serve), from the environment; docs/configuration.md says more of each:
${settingsHelp()}`;

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
          `dsh-sandbox: warning: ${unknown.join(', ')} ${unknown.length === 1 ? 'is' : 'are'} set but no setting of the service (a typo?); see docs/configuration.md\n`,
        );
      const { serve } = await import('./serve.ts');
      await serve(config);
      return 0;
    }
    case 'node': {
      const { serveNodeAgent } = await import('./serve-node.ts');
      const agent = await serveNodeAgent(config);
      await new Promise<void>((resolve) => {
        const stop = (): void => {
          void agent.close().finally(resolve);
        };
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
      });
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
