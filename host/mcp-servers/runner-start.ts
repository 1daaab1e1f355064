// A runner's start and its calls: connect() starts the program when none runs (one start shared by
// concurrent callers, all of it within one deadline, startTimeoutMs: launched, initialized, every
// page of its tools listed), callOn() makes one call on a started session.
// Invariants: a stopped runner starts nothing again, and a failed one nothing until registered
// again; every failure of the server becomes MCP_SERVER_FAILED (or TOOL_TIMEOUT) for the calls it
// hit, with the reason and the end of its stderr, never an exception anywhere else; a call that
// times out stops the program (it starts afresh at the next call); a crash of a running server
// counts as a failure.
// The MCP SDK's client (runner-open.ts and all it imports, zod among them: ~100 ms of imports) is
// loaded at the first start of any runner, not with the service, which may never start one.
import type { CallToolResult } from '@modelcontextprotocol/client';
import { messageOf, SandboxError } from '../errors.ts';
import { armIdle, failedError, failure, type RunnerState, type Session } from './runner-state.ts';

let opening: Promise<typeof import('./runner-open.ts')> | undefined;
/** runner-open.ts, imported once for every runner (concurrent first starts share the one import). */
export const loadOpen = (): Promise<typeof import('./runner-open.ts')> =>
  (opening ??= import('./runner-open.ts'));

export function connect(s: RunnerState): Promise<Session> {
  const { spec, limits } = s;
  if (s.stopped) return Promise.reject(failedError(spec.name, 'was removed.'));
  if (s.state === 'failed')
    return Promise.reject(
      failedError(
        spec.name,
        `is marked failed: ${s.lastError ?? 'it kept failing'}. Register it again to retry.`,
      ),
    );
  if (s.session !== undefined) return s.session;
  s.state = 'starting';
  s.starts++;
  let endedWhy: string | undefined;
  let mine: Session | undefined;
  // One deadline for the whole start: launched, initialized, and every page of its tools listed.
  const deadline = Date.now() + limits.startTimeoutMs;
  const started = (async () => {
    try {
      // Within the start's deadline and its error handling: a failed import fails this start.
      const { listTools, open } = await loadOpen();
      mine = await open(
        s,
        (why) => {
          endedWhy = why;
          if (s.stopped || s.live === undefined || s.live !== mine) return;
          // A crash of a running server: the next call starts it again (or it is marked failed).
          s.live = undefined;
          s.session = undefined;
          failure(s, why);
        },
        deadline,
      );
      await listTools(s, mine.client, deadline);
      if (s.stopped) throw failedError(spec.name, 'was removed.');
      s.live = mine;
      s.state = 'ready';
      armIdle(s);
      return mine;
    } catch (error) {
      s.session = undefined;
      void mine?.transport.close();
      if (s.stopped) throw failedError(spec.name, 'was removed.');
      if (error instanceof SandboxError && error.code === 'MCP_SERVER_FAILED') {
        failure(s, error.message);
        throw error;
      }
      failure(s, `did not start: ${endedWhy ?? messageOf(error)}`);
      throw failedError(spec.name, s.lastError ?? 'did not start.');
    }
  })();
  s.session = started;
  return started;
}

export async function callOn(
  s: RunnerState,
  active: Session,
  tool: string,
  args: Record<string, unknown>,
  signal: AbortSignal,
): Promise<CallToolResult> {
  const { spec, limits } = s;
  const timeout = Math.min(spec.timeoutMs ?? limits.callTimeoutMs, limits.callTimeoutMs);
  try {
    const result = await active.client.callTool({ name: tool, arguments: args }, { signal, timeout });
    s.failures = 0;
    return result as CallToolResult;
  } catch (error) {
    if (signal.aborted) throw error;
    // Loaded already: `active` came from a start.
    const { ProtocolError, SdkError, SdkErrorCode } = await loadOpen();
    if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout) {
      // A server that does not answer in time may never answer: it starts afresh next time.
      if (s.live === active) {
        s.live = undefined;
        s.session = undefined;
        s.state = 'stopped';
        s.lastError = `did not answer ${tool} within ${timeout} ms`;
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
    throw failedError(spec.name, `failed during ${tool}: ${s.lastError ?? messageOf(error)}`);
  }
}
