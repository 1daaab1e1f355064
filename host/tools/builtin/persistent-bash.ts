// `bash` of the minimal preset (seed 000: `command` only, "Run a command in the persistent Bash
// PTY"): every call runs in the agent's ONE shell, a terminal named `agent-bash` opened on first use,
// so the working directory, variables and functions carry over from call to call. The terminal
// lives in the sandbox, so the shell also survives a control-plane restart (found again by name).
// How a command runs: it is sent base64-encoded in short lines (a terminal line holds 4 KiB at
// most) and `eval`ed in the shell with stdin from /dev/null (nobody can type into it), between a
// start and an end marker carrying a per-call nonce and the exit status. The shell has no prompt,
// no echo and no line editing, so what lies between the markers is exactly the command's output.
// On timeout or cancellation the foreground job gets SIGINT (then SIGKILL if it stays).

import { randomBytes } from 'node:crypto';
import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import type { Sandbox, SandboxTerminals, TerminalInfo } from '../../sandbox/types.ts';
import { backstopTimeout, defineTool } from '../define.ts';
import { LIMITS, sandboxOf } from './services.ts';
import { capMiddle, cleanTerminalText } from './terminal-text.ts';

export const SHELL_NAME = 'agent-bash';
const DEFAULT_TIMEOUT_MS = 120_000;
const CHUNK = 3000;
const READ_BYTES = 1024 * 1024;
/** Output kept per call; beyond it the middle is dropped (the model sees at most LIMITS.bashOutput). */
const KEEP_BYTES = 4 * 1024 * 1024;
const SETTLE_MS = 2000;

const SHELL_ENV = {
  PS1: '',
  PS2: '',
  PROMPT_COMMAND: '',
  HISTFILE: '',
  TERM: 'dumb',
  PAGER: 'cat',
  GIT_PAGER: 'cat',
};

export const terminalsOf = (sandbox: Sandbox): SandboxTerminals => {
  if (!sandbox.terminals)
    throw new SandboxError(
      'SANDBOX_UNAVAILABLE',
      'This sandbox has no terminals (its provider does not support them); use a docker sandbox.',
    );
  return sandbox.terminals;
};

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The last shell id each sandbox handle used, to tell the model when its shell was replaced. */
const lastShell = new WeakMap<SandboxTerminals, string>();

const openShell = (terms: SandboxTerminals): Promise<TerminalInfo> =>
  terms.open({
    name: SHELL_NAME,
    reuse: true,
    command: ['bash', '--noprofile', '--norc', '--noediting'],
    env: SHELL_ENV,
    echo: false,
    cols: 200,
    rows: 50,
  });

/** Waits until the shell is back at its prompt (no foreground job), up to `ms`. */
const idle = async (terms: SandboxTerminals, id: string, ms: number): Promise<boolean> => {
  for (const end = Date.now() + ms; ; ) {
    const t = (await terms.list()).find((x) => x.id === id);
    if (t?.status !== 'running' || !t.busy) return true;
    if (Date.now() > end) return false;
    await sleep(50);
  }
};

/** SIGINT to the foreground job, then SIGKILL if it does not stop; true when the shell is free again. */
const interrupt = async (terms: SandboxTerminals, id: string): Promise<boolean> => {
  await terms.signal(id, 'SIGINT').catch(() => undefined);
  if (await idle(terms, id, SETTLE_MS)) return true;
  await terms.signal(id, 'SIGKILL').catch(() => undefined);
  return idle(terms, id, SETTLE_MS);
};

const script = (command: string, nonce: string): string => {
  const b64 = Buffer.from(command, 'utf8').toString('base64');
  const lines = ["__dsh_c=''"];
  for (let i = 0; i < b64.length; i += CHUNK) lines.push(`__dsh_c+='${b64.slice(i, i + CHUNK)}'`);
  // The markers are assembled by printf, so the text sent never contains them verbatim.
  lines.push(
    `printf '__DSH_%s_START__\\n' ${nonce}; eval "$(printf %s "$__dsh_c" | base64 -d)" </dev/null; ` +
      `__dsh_s=$?; printf '\\n__DSH_%s_END_%s__\\n' ${nonce} "$__dsh_s"; unset __dsh_c`,
  );
  return `${lines.join('\n')}\n`;
};

export interface ShellRun {
  output: string;
  exitCode: number | null;
  timedOut: boolean;
  interrupted: boolean;
  /** The shell ended during the command (e.g. `exit`); the next call starts a new one. */
  shellExited: boolean;
  /** A new shell was started for this call (earlier state is gone). */
  newShell: boolean;
  /** Output was dropped (the middle of a huge output, or what the terminal's buffer lost). */
  truncated: boolean;
}

export const runInShell = async (
  terms: SandboxTerminals,
  command: string,
  opts: { timeoutMs: number; signal: AbortSignal },
): Promise<ShellRun> => {
  let shell = await openShell(terms);
  const previous = lastShell.get(terms);
  const newShell = previous !== undefined && previous !== shell.id;
  lastShell.set(terms, shell.id);
  let notes = '';
  if (shell.busy) {
    // Something still runs from before (a command that outlived its call's interrupt): stop it.
    if (!(await interrupt(terms, shell.id)))
      throw new SandboxError(
        'CONFLICT',
        'The shell is still busy with an earlier command that ignores SIGINT and SIGKILL; try again later.',
      );
    notes = '[stopped a command still running from an earlier call]\n';
    shell = (await terms.list()).find((x) => x.id === shell.id) ?? shell;
  }
  const nonce = randomBytes(6).toString('hex');
  const start = `__DSH_${nonce}_START__\n`;
  const endRe = new RegExp(`__DSH_${nonce}_END_(\\d+)__\\r?\\n`);
  let offset = shell.endOffset;
  await terms.write(shell.id, script(command, nonce));

  const chunks: Buffer[] = [];
  let kept = 0;
  let truncated = false;
  let tail = '';
  let exitCode: number | null = null;
  let done = false;
  let shellExited = false;
  const take = (data: Buffer): void => {
    tail = (tail + data.toString('latin1')).slice(-(start.length + 200 + data.length));
    if (kept + data.length > KEEP_BYTES) {
      truncated = true;
      // Keep the first half as it is; of the rest, only the newest bytes.
      while (chunks.length > 1 && kept + data.length > KEEP_BYTES)
        kept -= (chunks.splice(1, 1)[0] as Buffer).length;
    }
    chunks.push(data);
    kept += data.length;
    const m = endRe.exec(tail);
    if (m) {
      done = true;
      exitCode = Number(m[1]);
    }
  };
  const pull = async (waitMs: number): Promise<void> => {
    const r = await terms.read(shell.id, { offset, count: READ_BYTES, waitMs });
    if (r.dropped > 0) truncated = true;
    offset = r.nextOffset;
    if (r.data.length > 0) take(r.data);
    if (r.status !== 'running' && r.nextOffset >= r.endOffset) shellExited = true;
  };

  const deadline = Date.now() + opts.timeoutMs;
  while (!done && !shellExited && !opts.signal.aborted && Date.now() < deadline) {
    await pull(Math.min(1000, Math.max(1, deadline - Date.now())));
  }
  let timedOut = false;
  let interrupted = false;
  if (!done && !shellExited) {
    timedOut = !opts.signal.aborted;
    interrupted = true;
    await interrupt(terms, shell.id);
    // Collect what the interrupted command printed last (the end marker, if the shell got that far).
    for (const end = Date.now() + 500; !done && !shellExited && Date.now() < end; ) await pull(100);
  }

  let text = cleanTerminalText(Buffer.concat(chunks).toString('utf8').replace(/\r\n/g, '\n'));
  const at = text.indexOf(start);
  if (at !== -1) text = text.slice(at + start.length);
  text = text.replace(new RegExp(`\\n?__DSH_${nonce}_END_\\d+__\\n[\\s\\S]*$`), '');
  return {
    output: notes + text,
    exitCode,
    timedOut,
    interrupted,
    shellExited,
    newShell,
    truncated,
  };
};

export interface PersistentBashOptions {
  /** Interrupt a command after this long. Default 120000. */
  timeoutMs?: number;
}

export const createPersistentBashTool = (options: PersistentBashOptions = {}) => {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return defineTool({
    name: 'bash',
    description: `Run a command in the persistent Bash PTY. One shell for the whole session: the working directory, environment variables and functions carry over between calls (\`cd\` stays). Output is stdout and stderr together, then the exit code when it is not 0. Commands cannot read input (stdin is empty); a command running longer than ${timeoutMs / 1000} s is interrupted. Start servers in the background (\`cmd > log 2>&1 &\`).`,
    parameters: v.object({
      command: v.pipe(v.string(), v.minLength(1), v.description('The command to run')),
    }),
    // The interrupt may go unanswered (a stuck PTY, a sandbox that never replies).
    timeoutMs: backstopTimeout(timeoutMs),
    output: {
      schema: v.object({
        output: v.string(),
        exitCode: v.nullable(v.number()),
        timedOut: v.boolean(),
        interrupted: v.boolean(),
        shellExited: v.boolean(),
        newShell: v.boolean(),
        truncated: v.boolean(),
      }),
      render: (_args, value) => {
        const parts: string[] = [];
        if (value.newShell) parts.push('[the previous shell had ended; this ran in a new shell]');
        if (value.output) parts.push(value.output.replace(/\n$/, ''));
        if (value.timedOut)
          parts.push(`[command timed out after ${timeoutMs / 1000} s and was interrupted (SIGINT)]`);
        else if (value.interrupted) parts.push('[command was cancelled and interrupted (SIGINT)]');
        if (value.shellExited) parts.push('[the shell exited; the next command starts a new shell]');
        else if (value.exitCode !== null && value.exitCode !== 0) parts.push(`Exit code: ${value.exitCode}`);
        if (value.truncated) parts.push('[part of the output was dropped: it was too large]');
        return [{ type: 'text', text: capMiddle(parts.join('\n') || '(no output)', LIMITS.bashOutput) }];
      },
    },
    async execute(args, exec) {
      const terms = terminalsOf(await sandboxOf(exec));
      return runInShell(terms, args.command, { timeoutMs, signal: exec.signal });
    },
  });
};

/** The minimal preset's `bash`. */
export const persistentBashTool = createPersistentBashTool();
