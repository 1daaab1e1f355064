// One MCP server of one agent, run on demand: started in the agent's sandbox at the first call that
// needs it (or at registration), initialized and its tools listed (listing.ts: bounded, checked in
// slices) through the official SDK's Client over SandboxStdioTransport, then kept while it answers,
// all of the start within one deadline (startTimeoutMs). State, in order: stopped → starting →
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
import { messageOf, SandboxError } from '../errors.ts';
import type { Sandbox } from '../sandbox/types.ts';
import { type McpListing, noSkips, readListing } from './listing.ts';
import { SandboxStdioTransport } from './transport.ts';
import type { McpLimits, McpServerSpec, McpServerState, McpToolInfo } from './types.ts';

const STDERR_TAIL = 2048;

/** A page of tools/list, its tools checked one by one afterwards (listing.ts). */
const ToolsPageShape = v.looseObject({
  tools: v.array(v.unknown()),
  nextCursor: v.optional(v.string()),
});

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
  onTools?: (tools: McpToolInfo[]) => void;
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
  /** What its last listing left out (counted, the first few with the reason), and why it stopped early. */
  listing(): Omit<McpListing, 'tools'>;
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
  let listedLast: McpListing = { tools: [], skipped: noSkips() };
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

  async function open(ended: (why: string) => void, deadline: number): Promise<Session> {
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
              if (live?.client === client)
                listTools(client, Date.now() + limits.startTimeoutMs).catch(() => {});
            },
          },
        },
      },
    );
    client.onerror = () => {}; // malformed lines are skipped; a broken server shows in its calls
    try {
      await client.connect(transport, { timeout: Math.max(1, deadline - Date.now()) });
    } catch (error) {
      void transport.close();
      throw error;
    }
    return { client, transport };
  }

  /** Reads the listing within the tenant's bounds by `deadline`, and tells the owner. */
  async function listTools(client: Client, deadline: number): Promise<McpToolInfo[]> {
    const listing = await readListing(
      (cursor, timeout) =>
        client
          .request({ method: 'tools/list', params: cursor === undefined ? {} : { cursor } }, ToolsPageShape, {
            timeout,
          })
          .catch((error: unknown) => {
            if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout)
              return 'timeout' as const;
            throw error;
          }),
      limits,
      deadline,
    );
    listedLast = listing;
    options.onTools?.(listing.tools);
    return listing.tools;
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
    // One deadline for the whole start: launched, initialized, and every page of its tools listed.
    const deadline = Date.now() + limits.startTimeoutMs;
    const started = (async () => {
      try {
        mine = await open((why) => {
          endedWhy = why;
          if (stopped || live === undefined || live !== mine) return;
          // A crash of a running server: the next call starts it again (or it is marked failed).
          live = undefined;
          session = undefined;
          failure(why);
        }, deadline);
        await listTools(mine.client, deadline);
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
    return listedLast.tools;
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
    listing: () => ({
      skipped: listedLast.skipped,
      ...(listedLast.incomplete === undefined ? {} : { incomplete: listedLast.incomplete }),
    }),
    start,
    call,
    stop,
  };
}
