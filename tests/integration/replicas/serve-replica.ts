// One control-plane replica in a process of its own, for tests that run several on one PostgreSQL
// database and kill, stop or restart them: its sandboxes are the service's default docker provider
// (re-adoption at start, a warm pool of `poolSize`) named, labelled and kept as the parent's
// docker fixture's (the run id in argv), so the parent sweeps them. Prints every start-up line,
// then `listening <url>`.
// Run: node serve-replica.ts '{"dataDir","runId","database","replicaId","secretsKey","leaseMs","poolSize"}'.
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
  poolSize?: number;
};
const config = loadConfig(
  {
    host: '127.0.0.1',
    port: 0,
    dataDir: options.dataDir,
    poolSize: options.poolSize ?? 0,
    isolateWorkers: 1,
    sandboxImage: process.env.DSH_SANDBOX_IMAGE,
    // The fixture's workspaces (below), shared by the replicas of the run; no spares, which the
    // start-up sweep of another replica (its folder is this one's) would take for leftovers.
    diskQuota: false,
    workspaceSpares: 0,
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
  docker: fixture.options({ pool: { size: config.poolSize }, workspaceSpares: 0 }),
  log: (line) => process.stdout.write(`${line}\n`),
});
process.stdout.write(`listening ${running.url}\n`);
const stop = () => void running.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
