// The sandboxd client's exec and SandboxJobs. exec keeps at most maxOutputBytes of each stream
// (and streams no more to onStdout/onStderr), whatever sandboxd sends: its `truncated` is its own
// or this cut's; its deadline is the command's plus a grace for the answer to arrive.

import type { ExecOptions, ExecResult, JobInfo, JobOutput, SandboxJobs } from '../types.ts';
import { type ClientState, checkEnv } from './client-state.ts';

const GRACE_MS = 5000;

export async function exec(s: ClientState, command: string, opts: ExecOptions = {}): Promise<ExecResult> {
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const out = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
  const size = { stdout: 0, stderr: 0 };
  let cut = false;
  const onOut = (stream: 'stdout' | 'stderr', data: Buffer): void => {
    const room = s.maxOutputBytes - size[stream];
    if (room <= 0) {
      cut = true;
      return;
    }
    const chunk = data.length > room ? data.subarray(0, room) : data;
    if (chunk !== data) cut = true;
    out[stream].push(chunk);
    size[stream] += chunk.length;
    (stream === 'stdout' ? opts.onStdout : opts.onStderr)?.(chunk);
  };
  const args = {
    command: String(command),
    cwd: s.resolve(opts.cwd ?? '.'),
    env: checkEnv(opts.env),
    timeoutMs,
    stdin: opts.stdin,
    maxOutputBytes: s.maxOutputBytes,
  };
  const value = await s.conn.call('exec', args, {
    timeoutMs: timeoutMs + GRACE_MS,
    signal: opts.signal,
    onOut,
  });
  return {
    exitCode: value.exitCode,
    stdout: Buffer.concat(out.stdout).toString('utf8'),
    stderr: Buffer.concat(out.stderr).toString('utf8'),
    timedOut: value.timedOut,
    truncated: value.truncated || cut,
    durationMs: value.durationMs,
  };
}

export function createClientJobs(s: ClientState): SandboxJobs {
  return {
    start: (command, opts = {}) =>
      s.conn.call(
        'jobStart',
        { command: String(command), cwd: s.resolve(opts.cwd ?? '.'), env: checkEnv(opts.env) },
        s.plain,
      ),
    async list(): Promise<JobInfo[]> {
      return (await s.conn.call('jobList', {}, s.plain)).jobs;
    },
    output(id, opts = {}): Promise<JobOutput> {
      const waitMs = opts.wait ? (opts.timeoutMs ?? 30_000) : 0;
      const args = {
        id: String(id),
        offset: Math.max(0, Math.floor(opts.offset ?? 0)),
        ...(opts.tail === undefined ? {} : { tail: Math.max(1, Math.floor(opts.tail)) }),
        waitMs,
        maxBytes: s.maxOutputBytes,
      };
      return s.conn.call('jobOutput', args, { timeoutMs: s.callTimeoutMs + waitMs, signal: opts.signal });
    },
    kill: (id, signal = 'SIGTERM') => s.conn.call('jobKill', { id: String(id), signal }, s.plain),
  };
}
