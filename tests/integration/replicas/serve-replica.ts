// One control-plane replica in a process of its own, for tests that run several on one PostgreSQL
// database and kill, stop or restart them: its sandboxes are the parent's docker fixture's (the
// run id in argv), so the parent sweeps them. Prints every start-up line, then `listening <url>`.
// Run: node serve-replica.ts '{"dataDir","runId","database","replicaId","secretsKey","leaseMs"}'.
import { loadConfig } from '../../../host/config.ts';
import { startServer } from '../../../host/serve.ts';
import { dockerFixture } from '../sandbox/fixtures.ts';

const options = JSON.parse(process.argv[2] ?? '{}') as {
  dataDir: string;
  runId: string;
  database: string;
  replicaId: string;
  secretsKey: string;
  leaseMs: number;
};
const config = loadConfig(
  {
    host: '127.0.0.1',
    port: 0,
    dataDir: options.dataDir,
    poolSize: 0,
    isolateWorkers: 1,
    database: options.database,
  },
  {
    DSH_SECRETS_KEY: options.secretsKey,
    DSH_REPLICA_ID: options.replicaId,
    DSH_REPLICA_LEASE_MS: String(options.leaseMs),
  },
);
const fixture = dockerFixture(options.runId);
const running = await startServer(config, {
  sandboxes: (egress) => fixture.provider({ egress }),
  log: (line) => process.stdout.write(`${line}\n`),
});
process.stdout.write(`listening ${running.url}\n`);
const stop = () => void running.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
