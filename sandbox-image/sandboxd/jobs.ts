// Background jobs for sandboxd. Each job is `bash -c command` in a session (and process group) of its
// own, its stdout and stderr appended to one file in the state directory, described by job.json and,
// once it ends, exit.json. The records live on disk so that a new host connection (after a
// control-plane restart) lists every job with its complete output; the state directory defaults to
// /tmp/sandboxd, which lasts exactly as long as the container (and so as the jobs' processes).
// This module wires the parts over one JobsState (job-records.ts: the records on disk, their
// untrusted reading, the jobs this process started); job-output.ts reads a job's output; starting,
// listing and killing jobs are here.
// Invariants: a job's output file only grows; exit.json is written once (atomically) and makes the
// status final; a job's end is listened for before anything is awaited, so a job that ends at once
// is not missed; a recorded pid is signalled only when its real uid is the agent's.

import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, constants, promises as fsp, openSync } from 'node:fs';
import { posix } from 'node:path';
import { WireError } from '../../sandbox-wire/errors.ts';
import { childEnv, workdir } from './exec.ts';
import { agentMaySignal, asAgent } from './identity.ts';
import { jobOutput } from './job-output.ts';
import { info, type JobRecord, type JobsState, load, paths, waitForEnd, writeJson } from './job-records.ts';
import { type Args, env, killGroup, str } from './util.ts';
import type { Workspace } from './workspace.ts';

const SIGNALS = ['SIGTERM', 'SIGKILL', 'SIGINT'] as const;

export async function createJobs(ws: Workspace, stateDir: string) {
  const dir = posix.join(stateDir, 'jobs');
  await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
  const s: JobsState = { ws, dir, children: new Map() };
  return {
    jobStart: (args: Args) => jobStart(s, args),
    jobList: () => jobList(s),
    jobOutput: (args: Args, signal: AbortSignal) => jobOutput(s, args, signal),
    jobKill: (args: Args) => jobKill(s, args),
    /** Stop every job's process group (tests; a container simply dies with its jobs). */
    killAll(): void {
      for (const { child } of s.children.values()) killGroup(child.pid, 'SIGKILL');
    },
  };
}

async function jobStart(s: JobsState, args: Args) {
  const command = str(args, 'command');
  const { abs, real } = await workdir(s.ws, args.cwd === undefined ? undefined : str(args, 'cwd'));
  const id = randomBytes(5).toString('hex');
  const p = paths(s, id);
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
          s.children.delete(id);
          resolve();
        });
    }),
  );
  child.on('error', () => {});
  s.children.set(id, { child, exited });
  await recorded;
  return info({ rec, exit: undefined });
}

async function jobList(s: JobsState) {
  const ids = await fsp.readdir(s.dir).catch(() => [] as string[]);
  const jobs: Array<ReturnType<typeof info>> = [];
  for (const id of ids) {
    try {
      jobs.push(info(await load(s, id)));
    } catch {
      // not a job's directory (or a half-written one): skip it
    }
  }
  return { jobs: jobs.sort((a, b) => a.startedAt - b.startedAt || (a.id < b.id ? -1 : 1)) };
}

async function jobKill(s: JobsState, args: Args) {
  const id = str(args, 'id');
  const sig = (SIGNALS as readonly string[]).includes(String(args.signal))
    ? (args.signal as NodeJS.Signals)
    : 'SIGTERM';
  const job = await load(s, id);
  if (!job.exit) {
    job.rec.killRequested = true;
    await writeJson(paths(s, id).job, job.rec);
    // A job this sandboxd started and still tracks is signalled by the pid it spawned, whatever
    // uid that has now (a kill right after the start finds it still setpriv, not yet the
    // agent's, and must not be lost), never by the pid in its record, which the agent can
    // rewrite; a job known only from its record is signalled only if that pid is the agent's.
    const tracked = s.children.get(id)?.child.pid;
    if (tracked !== undefined) killGroup(tracked, sig);
    else if (agentMaySignal(job.rec.pid)) killGroup(job.rec.pid, sig);
    await waitForEnd(s, id, job.rec, 2000);
  }
  return info(await load(s, id));
}
