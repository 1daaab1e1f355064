// One MCP server of one agent, run on demand: started in the agent's sandbox at the first call that
// needs it (or at registration), initialized and its tools listed, then kept while it answers. State,
// in order: stopped → starting → ready → (it ends: stopped | a call times out: stopped, the program
// killed | no call for idleMs: stopped) … and failed once `maxFailures` starts or crashes came in a
// row (only a new registration clears it).
// This module wires the parts, each in its own module: runner-state.ts holds the state, the idle
// timer and the failure count; runner-open.ts opens a program (its transport, the SDK's Client, its
// tools listed, list_changed heard); runner-start.ts starts it (connect) and makes one call (callOn).
// Invariants: at most one program per runner at a time (concurrent callers share one start);
// every failure of the server becomes MCP_SERVER_FAILED (or TOOL_TIMEOUT) for the calls it hit,
// with the reason and the end of its stderr, never an exception anywhere else; a stopped runner
// starts nothing again.
import type { CallToolResult } from '@modelcontextprotocol/client';
import { noSkips } from './listing.ts';
import { callOn, connect } from './runner-start.ts';
import { armIdle, type McpRunner, type McpRunnerOptions, type RunnerState } from './runner-state.ts';
import type { McpToolInfo } from './types.ts';

export type { McpRunner, McpRunnerOptions } from './runner-state.ts';

export function createMcpRunner(options: McpRunnerOptions): McpRunner {
  const { spec, limits } = options;
  const s: RunnerState = {
    options,
    spec,
    limits,
    state: 'stopped',
    session: undefined,
    live: undefined,
    failures: 0,
    starts: 0,
    lastError: undefined,
    stopped: false,
    stderr: '',
    calls: 0,
    listedLast: { tools: [], skipped: noSkips() },
    idle: undefined,
  };

  async function start(): Promise<McpToolInfo[]> {
    await connect(s);
    return s.listedLast.tools;
  }

  async function call(
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<CallToolResult> {
    s.calls++;
    clearTimeout(s.idle);
    try {
      return await callOn(s, await connect(s), tool, args, signal);
    } finally {
      s.calls--;
      armIdle(s);
    }
  }

  function stop(): void {
    s.stopped = true;
    clearTimeout(s.idle);
    const running = s.session;
    s.session = undefined;
    s.live = undefined;
    s.state = 'stopped';
    void running?.then((r) => r.transport.close()).catch(() => {});
  }

  return {
    spec,
    deadlineMs:
      limits.startTimeoutMs + Math.min(spec.timeoutMs ?? limits.callTimeoutMs, limits.callTimeoutMs),
    state: () => s.state,
    lastError: () => s.lastError,
    restarts: () => Math.max(0, s.starts - 1),
    listing: () => ({
      skipped: s.listedLast.skipped,
      ...(s.listedLast.incomplete === undefined ? {} : { incomplete: s.listedLast.incomplete }),
    }),
    start,
    call,
    stop,
  };
}
