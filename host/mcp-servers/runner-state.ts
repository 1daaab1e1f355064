// The state one MCP server's runner keeps (runner.ts wires it), the runner's public shape, and the
// few steps every part shares: the idle timer, a failure counted against maxFailures, the end of
// the program's stderr quoted in an error.
// Invariants: `session` is the start under way or done and undefined while no program runs; `live`
// is the running program's session, set only once its start finished; a failure moves the runner to
// 'failed' after `maxFailures` in a row (only a new registration clears it), else to 'stopped'.
import type { CallToolResult, Client, FetchLike } from '@modelcontextprotocol/client';
import { SandboxError } from '../errors.ts';
import type { Sandbox } from '../sandbox/types.ts';
import type { McpListing } from './listing.ts';
import type { McpLimits, McpServerSpec, McpServerState, McpToolInfo } from './types.ts';

export const STDERR_TAIL = 2048;

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

export interface Session {
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

/** One runner's state, shared by its parts. */
export interface RunnerState {
  options: McpRunnerOptions;
  spec: McpServerSpec;
  limits: McpLimits;
  state: McpServerState;
  /** The start under way or done; undefined while no program runs. */
  session: Promise<Session> | undefined;
  /** The running program's session, once started. */
  live: Session | undefined;
  failures: number;
  starts: number;
  lastError: string | undefined;
  stopped: boolean;
  stderr: string;
  calls: number;
  /** What the server listed last. */
  listedLast: McpListing;
  idle: NodeJS.Timeout | undefined;
}

export const failedError = (name: string, why: string): SandboxError =>
  new SandboxError('MCP_SERVER_FAILED', `MCP server ${name} ${why}`, { data: { server: name } });

/** Stops a running server that had no call for idleMs (not a failure: it starts again when needed). */
export function armIdle(s: RunnerState): void {
  clearTimeout(s.idle);
  if (s.limits.idleMs <= 0 || s.calls > 0) return;
  s.idle = setTimeout(() => {
    const active = s.live;
    if (active === undefined || s.calls > 0) return;
    s.live = undefined;
    s.session = undefined;
    s.state = 'stopped';
    void active.transport.close();
  }, s.limits.idleMs);
  s.idle.unref();
}

function tail(s: RunnerState): string {
  const text = s.stderr.replace(/\s+$/, '');
  return text === '' ? '' : ` (stderr: ${text.slice(-STDERR_TAIL)})`;
}

export function failure(s: RunnerState, why: string): void {
  s.failures++;
  s.lastError = `${why}${tail(s)}`;
  s.state = s.failures >= s.limits.maxFailures ? 'failed' : 'stopped';
}
