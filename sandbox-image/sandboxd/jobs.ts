// Background jobs for sandboxd. Each job is `bash -c command` in a session (and process group) of its
// own, its stdout and stderr appended to one file in the state directory, described by job.json and,
// once it ends, exit.json. The records live on disk so that a new host connection (after a
// control-plane restart) lists every job with its complete output; the state directory defaults to
// /tmp/sandboxd, which lasts exactly as long as the container (and so as the jobs' processes).
// Invariants: a job's output file only grows; exit.json is written once (atomically) and makes the
// status final; status is `killed` when the job died from a signal or after a kill request.
// The state directory is the agent's to write (sandboxd's file access uses the agent's ids,
// identity.ts), so its records are untrusted input: they are opened without following a symlink
// and only when they are regular files the agent owns (never, say, sandboxd's own /proc/self/*),
// and a recorded pid is signalled only when its real uid is the agent's.

import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, constants, promises as fsp, openSync } from 'node:fs';
import { posix } from 'node:path';
import { WireError } from '../../sandbox-wire/errors.ts';
import { childEnv, workdir } from './exec.ts';
import { agentIds, agentMaySignal, asAgent } from './identity.ts';
import { type Args, env, killGroup, optInt, sleep, str } from './util.ts';
import type { Workspace } from './workspace.ts';

interface JobRecord {
  id: string;
  command: string;
  cwd: string;
  pid: number;
  startedAt: number;
  killRequested?: boolean;
}
interface ExitRecord {
  exitCode: number | null;
  signal: string | null;
  endedAt: number;
}

const SIGNALS = ['SIGTERM', 'SIGKILL', 'SIGINT'] as const;
const MAX_OUTPUT_BYTES = 8 * 1024 * 1024;

const writeJson = async (file: string, value: unknown): Promise<void> => {
  const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  await fsp.writeFile(tmp, JSON.stringify(value));
  await fsp.rename(tmp, file);
};
/** Opens a record for reading: no symlink, a regular file, owned by the agent when running apart. */
const openRecord = async (file: string): Promise<fsp.FileHandle> => {
  const fh = await fsp.open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  const st = await fh.stat().catch(() => undefined);
  const ids = agentIds();
  if (!st?.isFile() || (ids && st.uid !== ids.uid)) {
    await fh.close();
    throw new WireError('FORBIDDEN', `${file} is not a job record.`);
  }
  return fh;
};
const readJson = async <T>(file: string): Promise<T | undefined> => {
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
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Longest prefix of `buf` that does not end inside a UTF-8 character. */
/** Continuation bytes (at most 3) at the start of `buf`: where its first whole character starts. */
const utf8Start = (buf: Buffer): number => {
  let i = 0;
  while (i < 3 && i < buf.length && ((buf[i] as number) & 0xc0) === 0x80) i++;
  return i;
};

const utf8Prefix = (buf: Buffer): Buffer => {
  let i = buf.length;
  let back = 0;
  while (i > 0 && back < 4 && ((buf[i - 1] as number) & 0xc0) === 0x80) {
    i--;
    back++;
  }
  if (i === 0) return buf;
  const lead = buf[i - 1] as number;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return need > back + 1 ? buf.subarray(0, i - 1) : buf;
};

export const createJobs = async (ws: Workspace, stateDir: string) => {
  const dir = posix.join(stateDir, 'jobs');
  await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
  const children = new Map<string, { child: ChildProcess; exited: Promise<void> }>();
  const paths = (id: string) => ({
    job: posix.join(dir, id, 'job.json'),
    exit: posix.join(dir, id, 'exit.json'),
    out: posix.join(dir, id, 'output'),
  });

  const load = async (id: string): Promise<{ rec: JobRecord; exit: ExitRecord | undefined }> => {
    const rec = /^[a-z0-9]{1,32}$/.test(id) ? await readJson<JobRecord>(paths(id).job) : undefined;
    if (!rec)
      throw new WireError(
        'JOB_NOT_FOUND',
        `No job with id ${JSON.stringify(id)}; list jobs to see their ids.`,
        { data: { id } },
      );
    let exit = await readJson<ExitRecord>(paths(id).exit);
    if (!exit && !children.has(id) && !alive(rec.pid)) {
      // Started by an earlier sandboxd that could not see it end: the exit status is lost.
      exit = { exitCode: null, signal: null, endedAt: Date.now() };
      await writeJson(paths(id).exit, exit);
    }
    return { rec, exit };
  };
  const info = ({ rec, exit }: { rec: JobRecord; exit: ExitRecord | undefined }) => ({
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
  });
  const waitForEnd = async (id: string, rec: JobRecord, ms: number, signal?: AbortSignal): Promise<void> => {
    const tracked = children.get(id);
    const ac = new AbortController();
    const stop = (): void => ac.abort();
    signal?.addEventListener('abort', stop, { once: true });
    if (tracked) await Promise.race([tracked.exited, sleep(ms, ac.signal)]);
    else
      for (const end = Date.now() + ms; Date.now() < end && alive(rec.pid) && !ac.signal.aborted; )
        await sleep(100, ac.signal);
    ac.abort();
    signal?.removeEventListener('abort', stop);
  };

  return {
    async jobStart(args: Args) {
      const command = str(args, 'command');
      const { abs, real } = await workdir(ws, args.cwd === undefined ? undefined : str(args, 'cwd'));
      const id = randomBytes(5).toString('hex');
      const p = paths(id);
      await fsp.mkdir(posix.dirname(p.job), { mode: 0o700 });
      // A new file, never an existing name: the job's directory is the agent's to write, and a FIFO
      // or link planted there between the mkdir and this open must not block or redirect sandboxd.
      const { O_WRONLY, O_APPEND, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = constants;
      const fd = openSync(p.out, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK, 0o600);
      let child: ChildProcess;
      try {
        const cmd = asAgent('bash', ['-c', command]);
        child = spawn(cmd.file, cmd.args, {
          cwd: real,
          env: childEnv(env(args, 'env')),
          detached: true,
          stdio: ['ignore', fd, fd],
        });
      } finally {
        closeSync(fd);
      }
      const pid = child.pid;
      if (pid === undefined) throw new WireError('TOOL_FAILED', 'Could not start bash for the job.');
      const rec: JobRecord = { id, command, cwd: abs, pid, startedAt: Date.now() };
      // Listen before any await: a job that ends at once (echo) must not end unheard.
      const recorded = writeJson(p.job, rec);
      const exited = new Promise<void>((resolve) =>
        child.once('exit', (code, sig) => {
          recorded
            .then(() => writeJson(p.exit, { exitCode: sig ? null : code, signal: sig, endedAt: Date.now() }))
            .catch(() => {})
            .finally(() => {
              children.delete(id);
              resolve();
            });
        }),
      );
      child.on('error', () => {});
      children.set(id, { child, exited });
      await recorded;
      return info({ rec, exit: undefined });
    },

    async jobList() {
      const ids = await fsp.readdir(dir).catch(() => [] as string[]);
      const jobs: Array<ReturnType<typeof info>> = [];
      for (const id of ids) {
        try {
          jobs.push(info(await load(id)));
        } catch {
          // not a job's directory (or a half-written one): skip it
        }
      }
      return { jobs: jobs.sort((a, b) => a.startedAt - b.startedAt || (a.id < b.id ? -1 : 1)) };
    },

    async jobOutput(args: Args, signal: AbortSignal) {
      const id = str(args, 'id');
      const asked = optInt(args, 'offset', 0);
      /** With a tail, the last `tail` bytes are read instead of those from `offset`. */
      const tail = optInt(args, 'tail', 0, MAX_OUTPUT_BYTES);
      const waitMs = optInt(args, 'waitMs', 0, 60 * 60 * 1000);
      const maxBytes = optInt(args, 'maxBytes', 1024 * 1024, MAX_OUTPUT_BYTES);
      let job = await load(id);
      if (waitMs > 0 && !job.exit) {
        await waitForEnd(id, job.rec, waitMs, signal);
        job = await load(id);
      }
      const out = paths(id).out;
      const size = await fsp.stat(out).then(
        (s) => s.size,
        () => 0,
      );
      let offset = tail > 0 ? Math.max(0, size - tail) : asked;
      const want = Math.max(0, Math.min(size - offset, maxBytes));
      let data: Buffer = Buffer.alloc(0);
      if (want > 0) {
        const fh = await openRecord(out);
        try {
          const buf = Buffer.alloc(want);
          const { bytesRead } = await fh.read(buf, 0, want, offset);
          data = buf.subarray(0, bytesRead);
        } finally {
          await fh.close();
        }
      }
      if (tail > 0 && offset > 0) {
        // Start at a character, not inside one.
        const skip = utf8Start(data);
        data = data.subarray(skip);
        offset += skip;
      }
      const truncated = size - offset > data.length;
      if (truncated) data = utf8Prefix(data);
      return {
        ...info(job),
        output: data.toString('utf8'),
        offset,
        nextOffset: offset + data.length,
        truncated,
      };
    },

    async jobKill(args: Args) {
      const id = str(args, 'id');
      const sig = (SIGNALS as readonly string[]).includes(String(args.signal))
        ? (args.signal as NodeJS.Signals)
        : 'SIGTERM';
      const job = await load(id);
      if (!job.exit) {
        job.rec.killRequested = true;
        await writeJson(paths(id).job, job.rec);
        // A job this sandboxd started and still tracks is signalled by the pid it spawned, whatever
        // uid that has now (a kill right after the start finds it still setpriv, not yet the
        // agent's, and must not be lost), never by the pid in its record, which the agent can
        // rewrite; a job known only from its record is signalled only if that pid is the agent's.
        const tracked = children.get(id)?.child.pid;
        if (tracked !== undefined) killGroup(tracked, sig);
        else if (agentMaySignal(job.rec.pid)) killGroup(job.rec.pid, sig);
        await waitForEnd(id, job.rec, 2000);
      }
      return info(await load(id));
    },

    /** Stop every job's process group (tests; a container simply dies with its jobs). */
    killAll(): void {
      for (const { child } of children.values()) killGroup(child.pid, 'SIGKILL');
    },
  };
};
