// The control plane `serve` runs, in a process of its own, for tests that kill it (kill -9) and
// start it again on the same data directory: its sandboxes are those of the parent's docker
// fixture (the run id in argv), so the parent sweeps them. Prints `listening <url>` once it serves,
// and every start-up line before that (`store <backend>` last). Run: node serve-child.ts '{"dataDir","runId","database"?}'.
import { loadConfig } from '../../../host/config.ts';
import { startServer } from '../../../host/serve.ts';
import { dockerFixture } from '../sandbox/fixtures.ts';

const { dataDir, runId, database } = JSON.parse(process.argv[2] ?? '{}') as {
  dataDir: string;
  runId: string;
  database?: string;
};
const config = loadConfig(
  {
    host: '127.0.0.1',
    port: 0,
    dataDir,
    poolSize: 0,
    isolateWorkers: 1,
    ...(database === undefined ? {} : { database }),
  },
  {},
);
const fixture = dockerFixture(runId);
const running = await startServer(config, {
  sandboxes: (egress) => fixture.provider({ egress }),
  log: (line) => process.stdout.write(`${line}\n`),
});
process.stdout.write(`store ${running.store.backend}\nlistening ${running.url}\n`);
const stop = () => void running.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
