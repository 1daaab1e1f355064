// One private PostgreSQL cluster per test run, for every project (the root config's globalSetup
// runs once per run, and what the root provides reaches every project): started here when the
// server binaries exist (tests/helpers/postgres-cluster.ts), stopped at teardown or, failing that,
// when this process exits. Tests reach it through tests/helpers/postgres.ts via
// inject('postgres'). When PostgreSQL is missing the run goes on without it: this logs why,
// and the tests that need it skip with that reason in their names. When it is there but the
// cluster does not start, those tests fail with initdb's or the server's words (a broken
// installation is not a reason to stay green).
import type { TestProject } from 'vitest/node';
import { findPostgresBin, POSTGRES_PACKAGE } from '../../scripts/setup/postgres.ts';
import { startPostgresCluster } from './postgres-cluster.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's private PostgreSQL cluster, or why there is none. */
    postgres:
      | { socketDir: string; adminUrl: string }
      /** Not installed: the tests that need it skip. */
      | { missing: string }
      /** Installed, but the cluster did not start: the tests that need it fail with this. */
      | { failed: string };
  }
}

export default async function setup(project: TestProject): Promise<() => void> {
  const bin = await findPostgresBin();
  if (bin === undefined) {
    const missing = `no PostgreSQL server binaries (install ${POSTGRES_PACKAGE}, or run \`npm run setup\` as root)`;
    process.stderr.write(`dsh-sandbox: ${missing}; the tests that need PostgreSQL are skipped\n`);
    project.provide('postgres', { missing });
    return () => {};
  }
  let cluster: ReturnType<typeof startPostgresCluster>;
  try {
    cluster = startPostgresCluster(bin);
  } catch (error) {
    const failed = `the test PostgreSQL cluster did not start: ${(error as Error).message}`;
    process.stderr.write(`dsh-sandbox: ${failed}\n`);
    project.provide('postgres', { failed });
    return () => {};
  }
  const stop = () => cluster.stop();
  process.once('exit', stop);
  project.provide('postgres', { socketDir: cluster.socketDir, adminUrl: cluster.adminUrl });
  return () => {
    process.off('exit', stop);
    stop();
  };
}
