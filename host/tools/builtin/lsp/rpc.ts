// One language server's program and its JSON-RPC connection (session.ts wires a session over it):
// the program started in the agent's sandbox on pipes sandboxd owns (as the agent, no network),
// spoken to with vscode-jsonrpc over its stdin and stdout, and one request bounded by the query
// deadline and the caller's signal.
// Invariants: everything the server writes is hostile input: its framing is checked before the
// JSON-RPC reader sees it (frames.ts: header and body sizes capped), its requests to us get empty
// answers; a query that outlives queryTimeoutMs ends with TOOL_TIMEOUT and the program; after the
// program's end every request fails at once, with why it ended and the end of its stderr.
// vscode-jsonrpc loads at the first language server's start, not with the service.
import { PassThrough, Writable } from 'node:stream';
import type { MessageConnection } from 'vscode-jsonrpc/node';
import { messageOf, SandboxError } from '../../../errors.ts';
import { lazyRequire } from '../../../lazy.ts';
import type { SandboxStdio, StdioProgram } from '../../../sandbox/types.ts';
import { watchFrames } from './frames.ts';
import type { Language } from './languages.ts';
import { type LspLimits, WORKSPACE } from './limits.ts';

const STDERR_TAIL = 2048;

const jsonrpc = lazyRequire<typeof import('vscode-jsonrpc/node')>('vscode-jsonrpc/node');

/** One language server's program and connection, shared by the session's parts. */
export interface RpcState {
  language: Language;
  limits: LspLimits;
  abort: AbortController;
  stderr: string;
  why: string | undefined;
  ended: boolean;
  program: StdioProgram;
  connection: MessageConnection;
}

/** Starts the program and listens to it. */
export function openRpc(stdio: SandboxStdio, language: Language, limits: LspLimits): RpcState {
  // Before the program starts: a library that fails to load leaves nothing running.
  const { createMessageConnection, StreamMessageReader, StreamMessageWriter } = jsonrpc();
  const abort = new AbortController();
  // Made first, its program and connection set below: the callbacks may use it as soon as they run.
  const s = { language, limits, abort, stderr: '', why: undefined, ended: false } as RpcState;
  const stdout = new PassThrough();
  const frames = watchFrames(limits.maxMessageBytes, (reason) => {
    s.why = `the language server sent ${reason}`;
    abort.abort();
  });
  const program = stdio.open({
    command: language.command,
    cwd: WORKSPACE,
    signal: abort.signal,
    onStdout: (chunk) => {
      if (frames.check(chunk)) stdout.write(chunk);
    },
    onStderr: (chunk) => {
      s.stderr = (s.stderr + chunk.toString('utf8')).slice(-STDERR_TAIL);
    },
  });
  s.program = program;
  const stdin = new Writable({
    write(chunk: Buffer, _encoding, done) {
      program.write(chunk).then(() => done(), done);
    },
  });
  const connection: MessageConnection = createMessageConnection(
    new StreamMessageReader(stdout),
    new StreamMessageWriter(stdin),
  );
  s.connection = connection;
  // What servers ask of their client: configuration (none), capability registration, progress.
  connection.onRequest((method) => (method === 'workspace/configuration' ? [] : null));
  connection.onNotification(() => {});
  connection.onError(() => {});
  connection.listen();
  void program.ended.then((end) => {
    s.ended = true;
    s.why ??= end.error?.message ?? `it exited (${end.signal ?? `code ${end.exitCode}`})`;
    connection.dispose();
    stdout.destroy();
  });
  return s;
}

function failure(s: RpcState, what: string, error?: unknown): SandboxError {
  const { stderr, language } = s;
  const reason = s.why ?? (error === undefined ? 'no answer' : messageOf(error));
  const tail = stderr.trim() === '' ? '' : `; its stderr ends with: ${stderr.trim().slice(-500)}`;
  return new SandboxError('TOOL_FAILED', `The ${language.id} language server ${what}: ${reason}${tail}`);
}

/** One request, bounded by the query deadline and the caller's signal; a stuck server is ended. */
export async function request(
  s: RpcState,
  method: string,
  params: object,
  callerSignal: AbortSignal,
): Promise<unknown> {
  const { language, limits, abort, program, connection } = s;
  if (s.ended) throw failure(s, 'is not running');
  const deadline = AbortSignal.any([callerSignal, AbortSignal.timeout(limits.queryTimeoutMs)]);
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () =>
      reject(
        callerSignal.aborted
          ? new SandboxError('ABORTED', 'The lsp call was cancelled.')
          : new SandboxError(
              'TOOL_TIMEOUT',
              `The ${language.id} language server did not answer ${method} within ${limits.queryTimeoutMs} ms.`,
            ),
      );
    deadline.addEventListener('abort', onAbort, { once: true });
  });
  const ended_ = program.ended.then(() => {
    throw failure(s, `ended during ${method}`);
  });
  const sent = connection.sendRequest(method, params);
  // Observed by the race; whichever loses settles later with nobody awaiting it.
  for (const loser of [ended_, sent]) loser.catch(() => {});
  try {
    return await Promise.race([sent, aborted, ended_]);
  } catch (error) {
    if (error instanceof SandboxError) {
      if (error.code === 'TOOL_TIMEOUT') abort.abort();
      throw error;
    }
    throw failure(s, `failed ${method}`, error);
  } finally {
    deadline.removeEventListener('abort', onAbort);
  }
}
