// exec for sandboxd: `bash -c command` in a process group of its own, output streamed as it comes.
// The command is started by the spawner when it is up (launch.ts: a fork of sandboxd itself costs
// 10-20 ms), else by child_process.spawn; the rest is the same either way.
// Invariants: the call never outlives its process group: on exit, timeout or cancel the whole group
// gets SIGKILL (a `cmd &` left behind is killed; background work belongs in jobs); at most
// maxOutputBytes per stream is sent, the rest is drained and dropped (truncated: true); when the host
// is slow to read the child's pipes are paused until the writer drains, and after the exit they are
// read to their end (output.ts, the rule exec and stdio programs share).

import { existsSync, type Stats, statSync } from 'node:fs';
import { WireError } from '../../sandbox-wire/errors.ts';
import { proxyEnv } from './egress.ts';
import { launch, type Proc, sharedSpawner } from './launch.ts';
import { type OutputIo, outputFlow } from './output.ts';
import type { Spawner } from './spawner.ts';
import { type Args, env, killGroup, optInt, optStr, str } from './util.ts';
import type { Workspace } from './workspace.ts';

export type ExecIo = OutputIo;

const MAX_TIMEOUT_MS = 24 * 60 * 60 * 1000;

/**
 * Debian's bash-static (the image's; the same bash release, linked statically) starts a command in
 * 0.3-0.8 ms less CPU than the dynamically linked bash (no dynamic loader, no relocations: its start
 * is most of a `bash -c true`). The spawner runs it with argv[0] `bash`, so $0 and $BASH read as with
 * /usr/bin/bash; all it lacks is `enable -f` (loadable builtins). Where it is missing, or when a
 * command starts without the spawner, it is /usr/bin/bash.
 */
const STATIC_BASH = existsSync('/usr/bin/bash-static') ? '/usr/bin/bash-static' : undefined;

/** Variables of sandboxd's own environment that never reach a command: shell hooks and terminal. */
const NOT_INHERITED = new Set(['BASH_ENV', 'ENV', 'PROMPT_COMMAND', 'TERM', 'LC_ALL']);

/**
 * Environment for the agent's commands: ours minus sandboxd's own settings and minus whatever would
 * make a shell depend on who runs sandboxd (BASH_ENV, ENV, PROMPT_COMMAND, TERM, LC_ALL), with HOME
 * the agent's home (SANDBOXD_HOME: /home/agent in the image) and LANG C.UTF-8 unless set, and the
 * egress proxy's variables (egress.ts proxyEnv: always, once it listens; a destination the tenant
 * does not allow gets a clear 403 from it); then the call's own variables, which win.
 */
export const childEnv = (extra: Record<string, string>): NodeJS.ProcessEnv => ({
  ...inheritedEnv(),
  ...proxyEnv,
  ...extra,
});

let inherited: NodeJS.ProcessEnv | undefined;

/**
 * The part of childEnv that comes from our own environment, read at the first command: sandboxd's
 * environment is set before it serves (main.ts) and never after, and reading process.env walks it
 * through C++ (an Object.entries of it cost 74-80 µs, a sixth of sandboxd's CPU in a `bash true`).
 */
const inheritedEnv = (): NodeJS.ProcessEnv => {
  if (inherited !== undefined) return inherited;
  const base: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if (!k.startsWith('SANDBOXD_') && !NOT_INHERITED.has(k)) base[k] = v;
  base.LANG ??= 'C.UTF-8';
  const home = process.env.SANDBOXD_HOME;
  if (home) base.HOME = home;
  inherited = base;
  return base;
};

/** Confined, existing working directory (real path). */
export const workdir = async (
  ws: Workspace,
  cwdArg: string | undefined,
): Promise<{ abs: string; real: string }> => {
  const abs = ws.resolve(cwdArg ?? '.');
  const real = await ws.real(abs, true);
  let st: Stats | undefined;
  try {
    st = statSync(real); // synchronous, as sandboxd's path calls are (fs-access.ts)
  } catch {
    st = undefined;
  }
  if (!st)
    throw new WireError('FILE_NOT_FOUND', `Working directory does not exist: ${abs}`, {
      data: { path: abs },
    });
  if (!st.isDirectory())
    throw new WireError('NOT_A_DIRECTORY', `Working directory is not a directory: ${abs}`, {
      data: { path: abs },
    });
  return { abs, real };
};

/** Runs one exec; `spawner` defaults to the process-wide one (started by the first exec). */
export const runExec = async (
  ws: Workspace,
  args: Args,
  io: ExecIo,
  signal: AbortSignal,
  spawner: Spawner = sharedSpawner(),
) => {
  const command = str(args, 'command');
  const timeoutMs = optInt(args, 'timeoutMs', 120_000, MAX_TIMEOUT_MS);
  const maxOutputBytes = optInt(args, 'maxOutputBytes', 1024 * 1024);
  const stdin = optStr(args, 'stdin');
  const { real } = await workdir(ws, optStr(args, 'cwd'));
  const started = Date.now();
  let child: Proc;
  try {
    child = await launch(
      {
        file: 'bash',
        args: ['-c', command],
        fasterFile: STATIC_BASH,
        cwd: real,
        env: childEnv(env(args, 'env')),
        stdin: stdin !== undefined,
      },
      spawner,
    );
  } catch (e) {
    if (e instanceof WireError) throw e;
    throw new WireError('TOOL_FAILED', `Could not start bash: ${(e as Error).message}`, { cause: e });
  }
  const pid = child.pid;
  let timedOut = false;
  let truncated = false;
  const sent = { stdout: 0, stderr: 0 };
  const flow = outputFlow(child, io);
  const pump = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
    const room = maxOutputBytes - sent[stream];
    const part = room <= 0 ? undefined : chunk.length > room ? chunk.subarray(0, room) : chunk;
    if (part !== chunk) truncated = true;
    sent[stream] += part?.length ?? 0;
    flow.forward(stream, part);
  };
  child.stdout.on('data', pump('stdout'));
  child.stderr.on('data', pump('stderr'));
  if (stdin !== undefined) child.stdin?.end(stdin);

  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(pid, 'SIGKILL');
  }, timeoutMs);
  const onAbort = (): void => killGroup(pid, 'SIGKILL');
  signal.addEventListener('abort', onAbort, { once: true });
  if (signal.aborted) onAbort(); // aborted while the command was being started

  try {
    const { code, signal: sig } = await child.exited;
    // Whatever the command left running in its group goes too, so the pipes can close.
    killGroup(pid, 'SIGKILL');
    await flow.drained(signal);
    const killed = timedOut || signal.aborted;
    return {
      exitCode: killed || sig !== null ? null : code,
      timedOut,
      truncated,
      durationMs: Date.now() - started,
    };
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
  }
};
