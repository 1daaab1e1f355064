// One language server of one agent: started in the agent's sandbox on pipes sandboxd owns (as the
// agent, no network), spoken to with vscode-jsonrpc (the JSON-RPC/LSP base protocol library of
// VS Code's own clients) over the program's stdin and stdout. Initialized once for the workspace;
// documents are opened or updated (full text) before each query; stopped after idleMs without a
// query, and whenever it fails.
// Everything the server writes is hostile input: its framing is checked before the JSON-RPC reader
// sees it (frames.ts: header and body sizes capped), its requests to us get empty answers, and a
// query that outlives queryTimeoutMs ends with TOOL_TIMEOUT. This module starts a session and keeps
// its documents; rpc.ts runs the program and its requests; limits.ts holds the bounds. Invariants: one program per session;
// after close() or the program's end the session answers nothing and a new one must be started.
import type { SandboxStdio } from '../../../sandbox/types.ts';
import type { Language } from './languages.ts';
import { type LspLimits, WORKSPACE } from './limits.ts';
import { openRpc, request } from './rpc.ts';

export { DEFAULT_LSP_LIMITS, type LspLimits, WORKSPACE } from './limits.ts';

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
  const s = openRpc(stdio, language, limits);
  const { abort, connection } = s;

  const opened = new Map<string, { version: number; text: string }>();
  try {
    await request(
      s,
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
    alive: () => !s.ended && !abort.signal.aborted,
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
      return request(s, method, { textDocument: { uri }, ...params }, callerSignal);
    },
    close() {
      s.why ??= 'it was stopped';
      abort.abort();
    },
  };
}
