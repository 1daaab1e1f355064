// A private PostgreSQL cluster for one test run: initdb into a fresh temporary directory, started
// with pg_ctl, reachable ONLY through a unix socket in that directory (listen_addresses = '': no
// TCP port is opened, so no system cluster or port is ever touched), durability off (fsync,
// synchronous_commit, full_page_writes: a crash loses a test database, nothing else).
// Invariants: the cluster never depends on the machine's rc files, HOME, locale or TERM (its
// children get a fixed environment, `-E UTF8 --locale=C`: byte-order collation like SQLite's
// BINARY); as root it runs as the `postgres` user (initdb refuses root) through runuser, or setpriv
// where runuser is missing; every directory it makes carries an `owner.pid` naming the process that
// started it, and a later start stops and removes the clusters whose owner died (a killed test
// run leaves no server behind for long). Used by tests/helpers/postgres-global-setup.ts; tests
// reach it through tests/helpers/postgres.ts.
import { type SpawnSyncOptions, spawnSync } from 'node:child_process';
import {
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface PostgresCluster {
  /** The directory holding the socket (`.s.PGSQL.5432`); pass it as the connection's host. */
  socketDir: string;
  /** A superuser URL of the `postgres` maintenance database, over the socket. */
  adminUrl: string;
  /** Stops the server (immediate) and removes the directory. Idempotent, synchronous (exit-safe). */
  stop(): void;
}

const PREFIX = 'dsh-pg-';
const PORT = 5432;
/** Unix socket paths are limited to 107 bytes; the socket's name adds 14. */
const MAX_SOCKET_DIR = 90;

/** The URL of database `name` on the cluster whose socket lives in `socketDir`. */
export const postgresUrl = (socketDir: string, name: string): string =>
  `postgres://postgres@localhost/${encodeURIComponent(name)}?host=${encodeURIComponent(socketDir)}`;

/** Runs a PostgreSQL tool as the cluster's owner; throws with its output when it fails. */
type Runner = (bin: string, tool: string, args: string[]) => string;

const runnerFor = (owner: { uid: number; gid: number } | undefined): Runner => {
  // Fixed environment: nothing from the caller's shell (locale, HOME, TERM, PG* variables).
  const env = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C', LANG: 'C', TZ: 'UTC' };
  const options: SpawnSyncOptions = { env, encoding: 'utf8', timeout: 120_000, cwd: '/' };
  const asOwner = (command: string[]): string[] => {
    if (owner === undefined) return command;
    if (existsSync('/usr/sbin/runuser') || existsSync('/sbin/runuser'))
      return ['runuser', '-u', 'postgres', '--', ...command];
    return ['setpriv', `--reuid=${owner.uid}`, `--regid=${owner.gid}`, '--init-groups', '--', ...command];
  };
  return (bin, tool, args) => {
    const [command, ...rest] = asOwner([join(bin, tool), ...args]);
    const result = spawnSync(command as string, rest, options);
    if (result.status !== 0) {
      const output = `${result.stdout ?? ''}${result.stderr ?? ''}${result.error?.message ?? ''}`.trim();
      throw new Error(`${tool} ${args.join(' ')} failed (status ${result.status}): ${output}`);
    }
    return String(result.stdout ?? '');
  };
};

/** The `postgres` account's ids when running as root (initdb refuses root), else undefined. */
const ownerAccount = (): { uid: number; gid: number } | undefined => {
  if (process.getuid?.() !== 0) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  if (uid === undefined || gid === undefined) {
    throw new Error('running as root, and there is no `postgres` user to run the test cluster as');
  }
  return { uid: Number(uid), gid: Number(gid) };
};

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Stops and removes clusters left by test runs that died before their teardown. */
const reapOrphans = (bin: string, run: Runner): void => {
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith(PREFIX)) continue;
    const dir = join(tmpdir(), name);
    let owner: number;
    try {
      owner = Number(readFileSync(join(dir, 'owner.pid'), 'utf8'));
    } catch {
      continue; // not made by this helper, or still being made
    }
    if (!Number.isInteger(owner) || owner <= 0 || alive(owner)) continue;
    try {
      if (existsSync(join(dir, 'data', 'postmaster.pid')))
        run(bin, 'pg_ctl', ['stop', '-D', join(dir, 'data'), '-m', 'immediate', '-w']);
    } catch {
      // already stopped
    }
    rmSync(dir, { recursive: true, force: true });
  }
};

const CONFIG = (socketDir: string, durable: boolean): string =>
  [
    `# dsh-sandbox ${durable ? 'bench' : 'test'} cluster: unix socket only${durable ? '' : ', no durability'}`,
    "listen_addresses = ''",
    `unix_socket_directories = '${socketDir}'`,
    `port = ${PORT}`,
    // A bench measures what an operator's server does: every commit flushed (the defaults).
    ...(durable ? [] : ['fsync = off', 'synchronous_commit = off', 'full_page_writes = off']),
    'max_connections = 200',
    'shared_buffers = 32MB',
    "timezone = 'UTC'",
    "log_timezone = 'UTC'",
    '',
  ].join('\n');

/**
 * Starts a fresh cluster from the binaries in `bin`. Throws with initdb's or pg_ctl's output.
 * `durable` (benches) keeps PostgreSQL's default durability: fsync, synchronous_commit, full pages.
 */
export const startPostgresCluster = (bin: string, options: { durable?: boolean } = {}): PostgresCluster => {
  const owner = ownerAccount();
  const run = runnerFor(owner);
  reapOrphans(bin, run);
  const dir = mkdtempSync(join(tmpdir(), PREFIX));
  if (dir.length > MAX_SOCKET_DIR) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`the temporary directory ${dir} is too long for a unix socket; set TMPDIR shorter`);
  }
  writeFileSync(join(dir, 'owner.pid'), String(process.pid));
  if (owner !== undefined) chownSync(dir, owner.uid, owner.gid);
  const data = join(dir, 'data');
  let started = false;
  let stopped = false;
  const stop = (): void => {
    if (stopped) return;
    stopped = true;
    try {
      // No postmaster.pid: it stopped already (or a later start reaped it as an orphan).
      if (started && existsSync(join(data, 'postmaster.pid')))
        run(bin, 'pg_ctl', ['stop', '-D', data, '-m', 'immediate', '-w']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  try {
    run(bin, 'initdb', [
      '-D',
      data,
      '-U',
      'postgres',
      '-A',
      'trust',
      '-E',
      'UTF8',
      '--locale=C',
      '--no-sync',
    ]);
    writeFileSync(join(data, 'postgresql.auto.conf'), CONFIG(dir, options.durable === true));
    if (owner !== undefined) chownSync(join(data, 'postgresql.auto.conf'), owner.uid, owner.gid);
    run(bin, 'pg_ctl', ['start', '-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '60', '-s']);
    started = true;
  } catch (error) {
    const log = existsSync(join(dir, 'server.log')) ? readFileSync(join(dir, 'server.log'), 'utf8') : '';
    stop();
    throw new Error(`${(error as Error).message}${log ? `\nserver log:\n${log}` : ''}`);
  }
  return { socketDir: dir, adminUrl: postgresUrl(dir, 'postgres'), stop };
};
