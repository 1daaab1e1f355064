// A job as sandboxd keeps it on disk: `<stateDir>/jobs/<id>/` holds job.json (what was started),
// output (stdout and stderr, appended) and, once it ends, exit.json. This module reads and writes
// those records and holds the jobs this process started (jobs.ts wires it).
// Invariants: the state directory is the agent's to write (sandboxd's file access uses the agent's
// ids, identity.ts), so its records are untrusted input: they are opened without following a
// symlink and only when they are regular files the agent owns (never, say, sandboxd's own
// /proc/self/*); records are written atomically (a temporary file, renamed); exit.json is written
// once and makes the status final; status is `killed` when the job died from a signal or after a
// kill request; a job started by an earlier sandboxd whose pid is gone gets an exit.json with its
// status lost.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants, promises as fsp } from 'node:fs';
import { posix } from 'node:path';
import { WireError } from '../../sandbox-wire/errors.ts';
import { agentIds } from './identity.ts';
import { sleep } from './util.ts';
import type { Workspace } from './workspace.ts';

export interface JobRecord {
  id: string;
  command: string;
  cwd: string;
  pid: number;
  startedAt: number;
  killRequested?: boolean;
}
export interface ExitRecord {
  exitCode: number | null;
  signal: string | null;
  endedAt: number;
}

export interface JobsState {
  ws: Workspace;
  /** `<stateDir>/jobs`. */
  dir: string;
  /** The jobs this process started, until their exit is recorded. */
  children: Map<string, { child: ChildProcess; exited: Promise<void> }>;
}

/** A job and its end, as load() reads them. */
export interface Job {
  rec: JobRecord;
  exit: ExitRecord | undefined;
}

export const writeJson = async (file: string, value: unknown): Promise<void> => {
  const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  await fsp.writeFile(tmp, JSON.stringify(value));
  await fsp.rename(tmp, file);
};
/** Opens a record for reading: no symlink, a regular file, owned by the agent when running apart. */
export const openRecord = async (file: string): Promise<fsp.FileHandle> => {
  const fh = await fsp.open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  const st = await fh.stat().catch(() => undefined);
  const ids = agentIds();
  if (!st?.isFile() || (ids && st.uid !== ids.uid)) {
    await fh.close();
    throw new WireError('FORBIDDEN', `${file} is not a job record.`);
  }
  return fh;
};
export const readJson = async <T>(file: string): Promise<T | undefined> => {
  try {
    const fh = await openRecord(file);
    try {
      return JSON.parse(await fh.readFile('utf8')) as T;
    } finally {
      await fh.close();
    }
  } catch {
    return undefined;
  }
};
export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};

export function paths(s: JobsState, id: string) {
  return {
    job: posix.join(s.dir, id, 'job.json'),
    exit: posix.join(s.dir, id, 'exit.json'),
    out: posix.join(s.dir, id, 'output'),
  };
}

export async function load(s: JobsState, id: string): Promise<Job> {
  const rec = /^[a-z0-9]{1,32}$/.test(id) ? await readJson<JobRecord>(paths(s, id).job) : undefined;
  if (!rec)
    throw new WireError(
      'JOB_NOT_FOUND',
      `No job with id ${JSON.stringify(id)}; list jobs to see their ids.`,
      {
        data: { id },
      },
    );
  let exit = await readJson<ExitRecord>(paths(s, id).exit);
  if (!exit && !s.children.has(id) && !alive(rec.pid)) {
    // Started by an earlier sandboxd that could not see it end: the exit status is lost.
    exit = { exitCode: null, signal: null, endedAt: Date.now() };
    await writeJson(paths(s, id).exit, exit);
  }
  return { rec, exit };
}

export function info({ rec, exit }: Job) {
  return {
    id: rec.id,
    command: rec.command,
    cwd: rec.cwd,
    status: !exit
      ? ('running' as const)
      : exit.signal !== null || rec.killRequested
        ? ('killed' as const)
        : ('exited' as const),
    exitCode: exit ? exit.exitCode : null,
    startedAt: rec.startedAt,
    endedAt: exit ? exit.endedAt : null,
  };
}

/** Resolves when the job ends, after `ms`, or when `signal` aborts. */
export async function waitForEnd(
  s: JobsState,
  id: string,
  rec: JobRecord,
  ms: number,
  signal?: AbortSignal,
): Promise<void> {
  const tracked = s.children.get(id);
  const ac = new AbortController();
  const stop = (): void => ac.abort();
  signal?.addEventListener('abort', stop, { once: true });
  if (tracked) await Promise.race([tracked.exited, sleep(ms, ac.signal)]);
  else
    for (const end = Date.now() + ms; Date.now() < end && alive(rec.pid) && !ac.signal.aborted; )
      await sleep(100, ac.signal);
  ac.abort();
  signal?.removeEventListener('abort', stop);
}
