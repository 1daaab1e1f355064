// Makes sure PostgreSQL's server binaries (initdb, pg_ctl, postgres) are there, for the tests'
// private cluster (tests/helpers/postgres-cluster.ts). Order: Debian's versioned directories
// (/usr/lib/postgresql/<major>/bin, the highest major first: Debian never puts initdb on PATH);
// otherwise an initdb on PATH; otherwise, as root on Debian, install Debian's postgresql-15 (once,
// like docker-engine.ts installs docker.io) WITHOUT its system cluster; otherwise say what to
// install. Nothing here starts or touches a server: the tests start their own, on a unix socket.
import { existsSync, mkdirSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { log, run, which } from './exec.ts';

/** The Debian package installed when no PostgreSQL is found (bookworm's major). */
export const POSTGRES_PACKAGE = 'postgresql-15';

const DEBIAN_ROOT = '/usr/lib/postgresql';
const TOOLS = ['initdb', 'pg_ctl', 'postgres'] as const;

const complete = (bin: string): boolean => TOOLS.every((tool) => existsSync(join(bin, tool)));

/** The directory holding initdb, pg_ctl and postgres, or undefined when PostgreSQL is missing. */
export const findPostgresBin = async (): Promise<string | undefined> => {
  const majors = existsSync(DEBIAN_ROOT)
    ? readdirSync(DEBIAN_ROOT)
        .filter((name) => /^\d+$/.test(name))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  for (const major of majors) {
    const bin = join(DEBIAN_ROOT, major, 'bin');
    if (complete(bin)) return bin;
  }
  const initdb = await which('initdb');
  if (initdb === undefined) return undefined;
  const bin = dirname(realpathSync(initdb));
  return complete(bin) ? bin : undefined;
};

/**
 * Debian's postgresql-common creates and starts a system cluster (`15/main` on port 5432) when the
 * server package is installed, unless createcluster.conf says not to. We want the binaries only:
 * a service nobody asked for, listening on a port, is exactly what the tests must never touch.
 */
const refuseSystemCluster = (): void => {
  const dir = '/etc/postgresql-common';
  const conf = join(dir, 'createcluster.conf');
  if (existsSync(conf)) return;
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    conf,
    '# written by dsh-sandbox setup: binaries only, no system cluster\ncreate_main_cluster = false\n',
  );
};

/**
 * The PostgreSQL bin directory, installing Debian's package first when it is missing and this is
 * root on Debian. Throws with what to install otherwise (callers that can live without PostgreSQL
 * catch it and say so).
 */
export const ensurePostgres = async (): Promise<{ bin: string; installed: boolean }> => {
  const found = await findPostgresBin();
  if (found !== undefined) return { bin: found, installed: false };
  if (process.getuid?.() !== 0 || !existsSync('/etc/debian_version')) {
    throw new Error(
      `no PostgreSQL server binaries (initdb, pg_ctl): install ${POSTGRES_PACKAGE} (or any PostgreSQL >= 13 server package)`,
    );
  }
  log(
    `no PostgreSQL: installing Debian ${POSTGRES_PACKAGE}, binaries only, no system cluster (one time) ...`,
  );
  refuseSystemCluster();
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await run('apt-get', ['update', '-qq'], { env, inherit: true });
  // confold: keep the createcluster.conf written above when postgresql-common brings its own.
  const install = await run(
    'apt-get',
    [
      'install',
      '-y',
      '-qq',
      '--no-install-recommends',
      '-o',
      'Dpkg::Options::=--force-confdef',
      '-o',
      'Dpkg::Options::=--force-confold',
      POSTGRES_PACKAGE,
    ],
    { env, inherit: true },
  );
  const bin = await findPostgresBin();
  if (install.code !== 0 || bin === undefined) {
    throw new Error(`apt-get install ${POSTGRES_PACKAGE} failed; install a PostgreSQL server by hand`);
  }
  return { bin, installed: true };
};
