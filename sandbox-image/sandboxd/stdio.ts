// Programs on pipes that sandboxd owns (stdio MCP servers, language servers): a `stdioOpen` call
// starts one as a server (launch.ts: own process group; identity.ts: the agent's uid, so the
// workspace is theirs alike, and the servers' gid, so the agent's processes cannot read its
// environment, which may hold the tenant's tokens) and is answered only when it has ended; meanwhile its stdout and stderr stream to the host as
// `out` frames of that call, and `stdioWrite` calls feed its stdin, naming it by the host's `key`.
// It belongs to the host session that opened it: a cancel of the open, the next `hello` or the
// program's own exit ends it, and then its whole process group is killed.
// Invariants: at most MAX_RUNNING programs at once; stdin never queues more than MAX_QUEUED_INPUT
// (a program that does not read fails the write, LIMIT_EXCEEDED); its output pipes follow the rule
// exec shares (output.ts: paused while the host is slow, read to their end after the exit); at most
// MAX_STDERR_BYTES of stderr is streamed over the program's life (the rest is read and dropped).

import { WireError } from '../../sandbox-wire/errors.ts';
import { childEnv, workdir } from './exec.ts';
import { launch, type Proc, sharedSpawner } from './launch.ts';
import { type OutputIo, outputFlow } from './output.ts';
import type { Spawner } from './spawner.ts';
import { type Args, env, killGroup, optStr, str } from './util.ts';
import type { Workspace } from './workspace.ts';

const MAX_RUNNING = 16;
const MAX_WRITE_BYTES = 4 * 1024 * 1024;
const MAX_QUEUED_INPUT = 8 * 1024 * 1024;
const MAX_STDERR_BYTES = 1024 * 1024;
const KEY = /^[A-Za-z0-9_-]{1,64}$/;

export type StdioIo = OutputIo;

interface Running {
  session: number;
  started: Promise<Proc>;
}

const commandOf = (args: Args): string[] => {
  const v = args.command;
  if (
    !Array.isArray(v) ||
    v.length === 0 ||
    v.length > 256 ||
    !v.every((a) => typeof a === 'string' && a.length <= 8192 && !a.includes('\0')) ||
    (v[0] as string).length === 0
  )
    throw new WireError('INVALID_ARGUMENTS', 'Argument command must be a non-empty array of strings.');
  return v as string[];
};

export const createStdio = (ws: Workspace, spawner: () => Spawner = sharedSpawner) => {
  const running = new Map<string, Running>();

  return {
    /** Runs the program until it ends (or the call is cancelled); streams its output meanwhile. */
    async stdioOpen(args: Args, io: StdioIo, signal: AbortSignal, session: number) {
      const key = str(args, 'key');
      if (!KEY.test(key))
        throw new WireError('INVALID_ARGUMENTS', 'Argument key must be 1-64 of [A-Za-z0-9_-].');
      if (running.has(key)) throw new WireError('CONFLICT', `A program with key ${key} is already running.`);
      if (running.size >= MAX_RUNNING)
        throw new WireError(
          'LIMIT_EXCEEDED',
          `At most ${MAX_RUNNING} stdio programs run at once; stop one first.`,
        );
      const command = commandOf(args);
      // Registered before the first await, so a stdioWrite right behind this call finds it.
      let settle: { resolve(p: Proc): void; reject(e: unknown): void } | undefined;
      const started = new Promise<Proc>((resolve, reject) => {
        settle = { resolve, reject };
      });
      started.catch(() => {});
      running.set(key, { session, started });
      let child: Proc | undefined;
      try {
        const { real } = await workdir(ws, optStr(args, 'cwd'));
        const [file, ...rest] = command as [string, ...string[]];
        child = await launch(
          { file, args: rest, cwd: real, env: childEnv(env(args, 'env')), stdin: true, as: 'server' },
          spawner(),
        );
        settle?.resolve(child);
      } catch (e) {
        running.delete(key);
        const error =
          e instanceof WireError
            ? e
            : new WireError('TOOL_FAILED', `Could not start ${command[0]}: ${(e as Error).message}`, {
                cause: e,
              });
        settle?.reject(error);
        throw error;
      }
      const proc = child;
      const flow = outputFlow(proc, io);
      let stderrSent = 0;
      proc.stdout.on('data', (chunk: Buffer) => flow.forward('stdout', chunk));
      proc.stderr.on('data', (chunk: Buffer) => {
        const room = MAX_STDERR_BYTES - stderrSent;
        const part = room <= 0 ? undefined : chunk.length > room ? chunk.subarray(0, room) : chunk;
        stderrSent += part?.length ?? 0;
        flow.forward('stderr', part);
      });
      const stop = (): void => killGroup(proc.pid, 'SIGKILL');
      signal.addEventListener('abort', stop, { once: true });
      if (signal.aborted) stop();
      try {
        const { code, signal: sig } = await proc.exited;
        stop(); // whatever it left in its group goes too
        await flow.drained(signal);
        return { exitCode: sig === null ? code : null, signal: sig ?? null };
      } finally {
        signal.removeEventListener('abort', stop);
        running.delete(key);
      }
    },

    /** Writes base64 `data` to the stdin of the program the same session opened under `key`. */
    async stdioWrite(args: Args, session: number) {
      const key = str(args, 'key');
      const data = Buffer.from(str(args, 'data'), 'base64');
      if (data.length > MAX_WRITE_BYTES)
        throw new WireError('PAYLOAD_TOO_LARGE', `One write carries at most ${MAX_WRITE_BYTES} bytes.`);
      const entry = running.get(key);
      if (entry === undefined || entry.session !== session)
        throw new WireError('CONFLICT', `No program with key ${key.slice(0, 64)} is running; open it again.`);
      const proc = await entry.started;
      const stdin = proc.stdin;
      if (stdin === undefined || stdin.destroyed || stdin.writableEnded)
        throw new WireError('CONFLICT', `The program ${key} has closed its input.`);
      if (stdin.writableLength > MAX_QUEUED_INPUT)
        throw new WireError('LIMIT_EXCEEDED', `The program ${key} is not reading its input.`);
      stdin.write(data);
      return { bytes: data.length };
    },
  };
};
