// One MCP server of one agent, run on demand: started in the agent's sandbox at the first call that
// needs it (or at registration), initialized and its tools listed through the official SDK's Client
// over SandboxStdioTransport, then kept while it answers. State, in order: stopped → starting →
// ready → (it ends: stopped | a call times out: stopped, the program killed | no call for idleMs:
// stopped) … and failed once `maxFailures` starts or crashes came in a row (only a new
// registration clears it). A server's `notifications/tools/list_changed` makes it list its tools
// again (debounced), and onTools tells the owner.
// Invariants: at most one program per runner at a time (concurrent callers share one start);
// every failure of the server becomes MCP_SERVER_FAILED (or TOOL_TIMEOUT) for the calls it hit,
// with the reason and the end of its stderr, never an exception anywhere else; a stopped runner
// starts nothing again.
import {
  type CallToolResult,
  Client,
  type FetchLike,
  type jsonSchemaValidator,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import * as v from 'valibot';
import { messageOf, SandboxError } from '../../errors.ts';
import type { Sandbox } from '../../sandbox/types.ts';
import type { JsonSchema } from '../../tools/types.ts';
import { SandboxStdioTransport } from './transport.ts';
import type { McpLimits, McpServerSpec, McpServerState, McpToolInfo } from './types.ts';

const STDERR_TAIL = 2048;
const MAX_DESCRIPTION = 8192;

/**
 * A page of tools/list, read leniently: the SDK's listTools() refuses the whole page when one tool
 * is malformed, so one bad tool would hide a server's good ones. Each tool is checked on its own.
 */
const ToolsPage = v.looseObject({
  tools: v.array(v.unknown()),
  nextCursor: v.optional(v.string()),
});
const ListedTool = v.looseObject({
  name: v.pipe(v.string(), v.minLength(1)),
  title: v.optional(v.string()),
  description: v.optional(v.string()),
  inputSchema: v.looseObject({ type: v.literal('object') }),
});

/** A listed tool's name for a skip note, whatever the server sent. */
const listedName = (tool: unknown, index: number): string => {
  const name = (tool as { name?: unknown } | null)?.name;
  return typeof name === 'string' && name !== '' ? name.slice(0, 200) : `#${index}`;
};

/**
 * Output schemas of a server's tools are not checked by the SDK: its default validator runs a
 * server's `pattern` with the backtracking engine on our one event loop. Structured content is
 * passed on as data, never trusted for anything.
 */
const noOutputValidation: jsonSchemaValidator = {
  getValidator: () => (input: unknown) => ({ valid: true, data: input as never, errorMessage: undefined }),
};

export interface McpRunnerOptions {
  spec: McpServerSpec;
  limits: McpLimits;
  sandbox: () => Promise<Sandbox>;
  /** The tools the server listed at a start (the runner's owner updates the agent's scope). */
  onTools?: (tools: McpToolInfo[], skipped: Array<{ tool: string; reason: string }>) => void;
  version?: string;
  /** How a remote (http) server is reached: the egress gateway's fetch. Without it they do not start. */
  remoteFetch?: FetchLike;
}

interface Session {
  client: Client;
  transport: { close(): Promise<void> };
}

export interface McpRunner {
  readonly spec: McpServerSpec;
  /** The longest one call may take by the runner's own deadlines: a start, then the call. */
  readonly deadlineMs: number;
  state(): McpServerState;
  lastError(): string | undefined;
  restarts(): number;
  /** Tools of its last listing left out (over maxToolsPerServer), with the reason. */
  skipped(): Array<{ tool: string; reason: string }>;
  /** Starts the server when it is not running; resolves to the tools it listed. */
  start(): Promise<McpToolInfo[]>;
  call(tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult>;
  /** Ends the program; the runner starts nothing again. */
  stop(): void;
}

const failedError = (name: string, why: string): SandboxError =>
  new SandboxError('MCP_SERVER_FAILED', `MCP server ${name} ${why}`, { data: { server: name } });

export function createMcpRunner(options: McpRunnerOptions): McpRunner {
  const { spec, limits } = options;
  let state: McpServerState = 'stopped';
  /** The start under way or done; undefined while no program runs. */
  let session: Promise<Session> | undefined;
  /** The running program's session, once started. */
  let live: Session | undefined;
  let failures = 0;
  let starts = 0;
  let lastError: string | undefined;
  let stopped = false;
  let stderr = '';
  let calls = 0;
  /** What the server listed last. */
  let listedLast: McpToolInfo[] = [];
  let skippedLast: Array<{ tool: string; reason: string }> = [];
  let idle: NodeJS.Timeout | undefined;

  /** Stops a running server that had no call for idleMs (not a failure: it starts again when needed). */
  function armIdle(): void {
    clearTimeout(idle);
    if (limits.idleMs <= 0 || calls > 0) return;
    idle = setTimeout(() => {
      const active = live;
      if (active === undefined || calls > 0) return;
      live = undefined;
      session = undefined;
      state = 'stopped';
      void active.transport.close();
    }, limits.idleMs);
    idle.unref();
  }

  function tail(): string {
    const text = stderr.replace(/\s+$/, '');
    return text === '' ? '' : ` (stderr: ${text.slice(-STDERR_TAIL)})`;
  }

  function failure(why: string): void {
    failures++;
    lastError = `${why}${tail()}`;
    state = failures >= limits.maxFailures ? 'failed' : 'stopped';
  }

  /** A remote server's transport: Streamable HTTP over the gateway's fetch, its headers on every request. */
  function httpTransport(): StreamableHTTPClientTransport {
    if (spec.transport !== 'http') throw new Error('not a remote server');
    if (options.remoteFetch === undefined)
      throw failedError(spec.name, 'cannot be reached: this service has no egress gateway.');
    return new StreamableHTTPClientTransport(new URL(spec.url), {
      fetch: options.remoteFetch,
      requestInit: { headers: { ...spec.headers } },
      // Only redirects within the server's origin, each one re-checked by the gateway.
      redirectPolicy: 'same-origin',
      reconnectionOptions: {
        maxRetries: 2,
        initialReconnectionDelay: 1000,
        maxReconnectionDelay: 10_000,
        reconnectionDelayGrowFactor: 2,
      },
    });
  }

  async function stdioTransport(ended: (why: string) => void): Promise<SandboxStdioTransport> {
    if (spec.transport !== 'stdio') throw new Error('not a stdio server');
    const sandbox = await options.sandbox();
    if (sandbox.stdio === undefined)
      throw failedError(spec.name, 'cannot run: this sandbox provider runs no stdio programs.');
    stderr = '';
    const transport = new SandboxStdioTransport({
      stdio: sandbox.stdio,
      command: spec.command,
      ...(spec.cwd === undefined ? {} : { cwd: spec.cwd }),
      ...(spec.env === undefined ? {} : { env: spec.env }),
      // A result's JSON plus its framing and envelope.
      maxMessageBytes: limits.maxResultBytes + 64 * 1024,
      onStderr: (chunk) => {
        stderr = (stderr + chunk.toString('utf8')).slice(-STDERR_TAIL);
      },
      onEnd: (end, why) =>
        ended(
          why !== undefined
            ? `was stopped: ${why}`
            : `ended: ${end.error?.message ?? (end.signal ? `killed by ${end.signal}` : `exit code ${String(end.exitCode)}`)}`,
        ),
    });
    return transport;
  }

  async function open(ended: (why: string) => void): Promise<Session> {
    const transport = spec.transport === 'http' ? httpTransport() : await stdioTransport(ended);
    const client: Client = new Client(
      { name: 'dsh-sandbox', version: options.version ?? '0.1.0' },
      {
        capabilities: {},
        jsonSchemaValidator: noOutputValidation,
        // We list (paginated, bounded) ourselves; a server that keeps announcing is debounced.
        listChanged: {
          tools: {
            autoRefresh: false,
            debounceMs: 1000,
            onChanged: () => {
              if (live?.client === client) listTools(client).catch(() => {});
            },
          },
        },
      },
    );
    client.onerror = () => {}; // malformed lines are skipped; a broken server shows in its calls
    try {
      await client.connect(transport, { timeout: limits.startTimeoutMs });
    } catch (error) {
      void transport.close();
      throw error;
    }
    return { client, transport };
  }

  async function listTools(client: Client): Promise<McpToolInfo[]> {
    const tools: McpToolInfo[] = [];
    const skipped: Array<{ tool: string; reason: string }> = [];
    let cursor: string | undefined;
    for (let page = 0; page < 16; page++) {
      const listed = await client.request(
        { method: 'tools/list', params: cursor === undefined ? {} : { cursor } },
        ToolsPage,
        { timeout: limits.startTimeoutMs },
      );
      for (const [index, entry] of listed.tools.entries()) {
        const tool = v.safeParse(ListedTool, entry);
        if (!tool.success) {
          const issue = tool.issues[0];
          const where =
            issue === undefined ? '' : ` (${v.getDotPath(issue) ?? 'the tool'}: ${issue.message})`;
          skipped.push({
            tool: listedName(entry, index),
            reason: `not a valid MCP tool${where}`.slice(0, 500),
          });
          continue;
        }
        if (tools.length >= limits.maxToolsPerServer) {
          skipped.push({ tool: listedName(entry, index), reason: `over ${limits.maxToolsPerServer} tools` });
          continue;
        }
        const { name, title, description, inputSchema } = tool.output;
        tools.push({
          name,
          description: (description ?? title ?? name).slice(0, MAX_DESCRIPTION),
          inputSchema: inputSchema as JsonSchema,
        });
      }
      cursor = listed.nextCursor;
      if (cursor === undefined) break;
    }
    listedLast = tools;
    skippedLast = skipped;
    options.onTools?.(tools, skipped);
    return tools;
  }

  function connect(): Promise<Session> {
    if (stopped) return Promise.reject(failedError(spec.name, 'was removed.'));
    if (state === 'failed')
      return Promise.reject(
        failedError(
          spec.name,
          `is marked failed: ${lastError ?? 'it kept failing'}. Register it again to retry.`,
        ),
      );
    if (session !== undefined) return session;
    state = 'starting';
    starts++;
    let endedWhy: string | undefined;
    let mine: Session | undefined;
    const started = (async () => {
      try {
        mine = await open((why) => {
          endedWhy = why;
          if (stopped || live === undefined || live !== mine) return;
          // A crash of a running server: the next call starts it again (or it is marked failed).
          live = undefined;
          session = undefined;
          failure(why);
        });
        await listTools(mine.client);
        if (stopped) throw failedError(spec.name, 'was removed.');
        live = mine;
        state = 'ready';
        armIdle();
        return mine;
      } catch (error) {
        session = undefined;
        void mine?.transport.close();
        if (stopped) throw failedError(spec.name, 'was removed.');
        if (error instanceof SandboxError && error.code === 'MCP_SERVER_FAILED') {
          failure(error.message);
          throw error;
        }
        failure(`did not start: ${endedWhy ?? messageOf(error)}`);
        throw failedError(spec.name, lastError ?? 'did not start.');
      }
    })();
    session = started;
    return started;
  }

  async function start(): Promise<McpToolInfo[]> {
    await connect();
    return listedLast;
  }

  async function call(
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<CallToolResult> {
    calls++;
    clearTimeout(idle);
    try {
      return await callOn(await connect(), tool, args, signal);
    } finally {
      calls--;
      armIdle();
    }
  }

  async function callOn(
    active: Session,
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<CallToolResult> {
    const timeout = Math.min(spec.timeoutMs ?? limits.callTimeoutMs, limits.callTimeoutMs);
    try {
      const result = await active.client.callTool({ name: tool, arguments: args }, { signal, timeout });
      failures = 0;
      return result as CallToolResult;
    } catch (error) {
      if (signal.aborted) throw error;
      if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout) {
        // A server that does not answer in time may never answer: it starts afresh next time.
        if (live === active) {
          live = undefined;
          session = undefined;
          state = 'stopped';
          lastError = `did not answer ${tool} within ${timeout} ms`;
          void active.transport.close();
        }
        throw new SandboxError(
          'TOOL_TIMEOUT',
          `MCP server ${spec.name} did not answer ${tool} within ${timeout} ms; it was stopped and starts again at the next call.`,
        );
      }
      if (error instanceof ProtocolError)
        throw new SandboxError('TOOL_FAILED', `MCP server ${spec.name}: ${error.message.slice(0, 4000)}`);
      // The connection closed under the call, or the answer was not a valid result.
      throw failedError(spec.name, `failed during ${tool}: ${lastError ?? messageOf(error)}`);
    }
  }

  function stop(): void {
    stopped = true;
    clearTimeout(idle);
    const running = session;
    session = undefined;
    live = undefined;
    state = 'stopped';
    void running?.then((s) => s.transport.close()).catch(() => {});
  }

  return {
    spec,
    deadlineMs:
      limits.startTimeoutMs + Math.min(spec.timeoutMs ?? limits.callTimeoutMs, limits.callTimeoutMs),
    state: () => state,
    lastError: () => lastError,
    restarts: () => Math.max(0, starts - 1),
    skipped: () => skippedLast,
    start,
    call,
    stop,
  };
}
