// One language server of one agent: started in the agent's sandbox on pipes sandboxd owns (as the
// agent, no network), spoken to with vscode-jsonrpc (the JSON-RPC/LSP base protocol library of
// VS Code's own clients) over the program's stdin and stdout. Initialized once for the workspace;
// documents are opened or updated (full text) before each query; stopped after idleMs without a
// query, and whenever it fails.
// Everything the server writes is hostile input: its framing is checked before the JSON-RPC reader
// sees it (frames.ts: header and body sizes capped), its requests to us get empty answers, and a
// query that outlives queryTimeoutMs ends with TOOL_TIMEOUT. Invariants: one program per session;
// after close() or the program's end the session answers nothing and a new one must be started.
import { PassThrough, Writable } from 'node:stream';
import {
  createMessageConnection,
  type MessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
} from 'vscode-jsonrpc/node';
import { messageOf, SandboxError } from '../../../errors.ts';
import type { SandboxStdio } from '../../../sandbox/types.ts';
import { watchFrames } from './frames.ts';
import type { Language } from './languages.ts';

export const WORKSPACE = '/workspace';
const STDERR_TAIL = 2048;

export interface LspLimits {
  /** Largest message a server may send, in bytes. */
  maxMessageBytes: number;
  /** How long one query (the server's start included) may take. */
  queryTimeoutMs: number;
  /** A server without a query for this long is stopped. */
  idleMs: number;
}

export const DEFAULT_LSP_LIMITS: LspLimits = {
  maxMessageBytes: 8 * 1024 * 1024,
  queryTimeoutMs: 60_000,
  idleMs: 10 * 60_000,
};

export interface LspSession {
  readonly language: Language;
  /** True until the program ended or close() was called. */
  alive(): boolean;
  /** Sends `method` about the file (opened or updated with `text` first); the server's raw answer. */
  query(
    method: string,
    uri: string,
    languageId: string,
    text: string,
    params: object,
    signal: AbortSignal,
  ): Promise<unknown>;
  close(): void;
}

export async function startSession(
  stdio: SandboxStdio,
  language: Language,
  limits: LspLimits,
  signal: AbortSignal,
): Promise<LspSession> {
  const abort = new AbortController();
  let stderr = '';
  let why: string | undefined;
  let ended = false;
  const stdout = new PassThrough();
  const frames = watchFrames(limits.maxMessageBytes, (reason) => {
    why = `the language server sent ${reason}`;
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
      stderr = (stderr + chunk.toString('utf8')).slice(-STDERR_TAIL);
    },
  });
  const stdin = new Writable({
    write(chunk: Buffer, _encoding, done) {
      program.write(chunk).then(() => done(), done);
    },
  });
  const connection: MessageConnection = createMessageConnection(
    new StreamMessageReader(stdout),
    new StreamMessageWriter(stdin),
  );
  // What servers ask of their client: configuration (none), capability registration, progress.
  connection.onRequest((method) => (method === 'workspace/configuration' ? [] : null));
  connection.onNotification(() => {});
  connection.onError(() => {});
  connection.listen();
  void program.ended.then((end) => {
    ended = true;
    why ??= end.error?.message ?? `it exited (${end.signal ?? `code ${end.exitCode}`})`;
    connection.dispose();
    stdout.destroy();
  });

  const failure = (what: string, error?: unknown): SandboxError => {
    const reason = why ?? (error === undefined ? 'no answer' : messageOf(error));
    const tail = stderr.trim() === '' ? '' : `; its stderr ends with: ${stderr.trim().slice(-500)}`;
    return new SandboxError('TOOL_FAILED', `The ${language.id} language server ${what}: ${reason}${tail}`);
  };

  /** One request, bounded by the query deadline and the caller's signal; a stuck server is ended. */
  async function request(method: string, params: object, callerSignal: AbortSignal): Promise<unknown> {
    if (ended) throw failure('is not running');
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
      throw failure(`ended during ${method}`);
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
      throw failure(`failed ${method}`, error);
    } finally {
      deadline.removeEventListener('abort', onAbort);
    }
  }

  const opened = new Map<string, { version: number; text: string }>();
  try {
    await request(
      'initialize',
      {
        processId: null,
        ...(language.initializationOptions === undefined
          ? {}
          : { initializationOptions: language.initializationOptions }),
        rootUri: `file://${WORKSPACE}`,
        workspaceFolders: [{ uri: `file://${WORKSPACE}`, name: 'workspace' }],
        capabilities: {
          textDocument: {
            synchronization: { didSave: false },
            definition: { linkSupport: true },
            implementation: { linkSupport: true },
            references: {},
            hover: { contentFormat: ['markdown', 'plaintext'] },
          },
          workspace: { workspaceFolders: true, configuration: true },
        },
      },
      signal,
    );
    await connection.sendNotification('initialized', {});
  } catch (error) {
    abort.abort();
    throw error;
  }

  return {
    language,
    alive: () => !ended && !abort.signal.aborted,
    async query(method, uri, languageId, text, params, callerSignal) {
      const known = opened.get(uri);
      if (known === undefined) {
        opened.set(uri, { version: 1, text });
        await connection.sendNotification('textDocument/didOpen', {
          textDocument: { uri, languageId, version: 1, text },
        });
      } else if (known.text !== text) {
        known.version++;
        known.text = text;
        await connection.sendNotification('textDocument/didChange', {
          textDocument: { uri, version: known.version },
          contentChanges: [{ text }],
        });
      }
      return request(method, { textDocument: { uri }, ...params }, callerSignal);
    },
    close() {
      why ??= 'it was stopped';
      abort.abort();
    },
  };
}
