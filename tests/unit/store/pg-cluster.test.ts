// The tests' private PostgreSQL cluster (tests/helpers/postgres-cluster.ts) keeps its promises:
// a socket in its own directory and no TCP, run by `postgres` when we are root, gone after stop(),
// and a cluster whose test run died is reaped by the next start.
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, inject, it } from 'vitest';
import { openPgDatabase } from '../../../host/store/pg/db.ts';
import { findPostgresBin } from '../../../scripts/setup/postgres.ts';
import { describePostgres } from '../../helpers/postgres.ts';
import { startPostgresCluster } from '../../helpers/postgres-cluster.ts';

/** A pid that belongs to no process (pid_max is at most 2^22). */
const DEAD_PID = 2 ** 22 + 1;

describePostgres('the private test cluster', () => {
  it('listens on its own socket only, runs as postgres under root, and leaves nothing after stop', async () => {
    const bin = (await findPostgresBin()) as string;
    const cluster = startPostgresCluster(bin);
    try {
      expect(existsSync(join(cluster.socketDir, '.s.PGSQL.5432'))).toBe(true);
      const db = openPgDatabase({ url: cluster.adminUrl, poolSize: 1 });
      try {
        expect(
          await db.one(
            "SELECT current_setting('listen_addresses') AS listen, current_setting('unix_socket_directories') AS dir, current_setting('fsync') AS fsync",
          ),
        ).toEqual({ listen: '', dir: cluster.socketDir, fsync: 'off' });
      } finally {
        await db.close();
      }
      if (process.getuid?.() === 0) expect(statSync(join(cluster.socketDir, 'data')).uid).not.toBe(0);
    } finally {
      cluster.stop();
    }
    expect(existsSync(cluster.socketDir)).toBe(false);
    cluster.stop(); // idempotent
  });

  it("stops and removes a cluster whose run died, at the next start, and leaves a live run's alone", async () => {
    const bin = (await findPostgresBin()) as string;
    const orphan = startPostgresCluster(bin);
    writeFileSync(join(orphan.socketDir, 'owner.pid'), String(DEAD_PID));
    const next = startPostgresCluster(bin);
    try {
      expect(existsSync(orphan.socketDir)).toBe(false);
      // This run's own cluster (its owner is alive) is untouched.
      const own = inject('postgres');
      expect('socketDir' in own && existsSync(join(own.socketDir, '.s.PGSQL.5432'))).toBe(true);
    } finally {
      next.stop();
      orphan.stop();
    }
  });
});
