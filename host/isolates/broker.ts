// The call broker: a program's `tools.<name>(args)` arrives as its worker's `call` message and goes
// to the run's onCall. The broker checks the frame (a binding of the run, JSON text, a call id) and
// the arguments as the HTTP surface would (arguments.ts: no prototype keys, bounded nesting),
// counts calls against maxCalls and sizes against maxCallBytes, keeps at most maxInFlight calls
// pending in onCall (later ones wait in the order the program made them), and sends each
// settlement back as a size-capped envelope. Which pending calls may overlap is not decided here:
// onCall (the tool pipeline's gate) schedules them.
// While a run with a worker of its own waits on its calls, the broker gives that worker back to
// everybody (releaseWhileWaiting).
import { isSandboxError, messageOf } from '../errors.ts';
import { cleanArguments, MAX_ARGUMENT_DEPTH } from './arguments.ts';
import {
  failed,
  finishRun,
  type HostRun,
  type HostState,
  type Settled,
  type WaitingCall,
} from './host-run.ts';
import type { WorkerToHost } from './protocol.ts';
import { clip, MAX_ERROR_CHARS } from './protocol.ts';
import type { WorkerHandle } from './supervisor.ts';
import type { JsonValue } from './types.ts';

/**
 * A run dedicated a worker (inline) that has waited this long on its tool calls gives the worker
 * back to everybody: a program waiting minutes on a slow tool or an approval gains nothing from a
 * worker of its own, and would close it to all other runs meanwhile.
 */
const INLINE_RELEASE_MS = 200;

export function onProgramCall(
  state: HostState,
  run: HostRun,
  handle: WorkerHandle,
  message: Extract<WorkerToHost, { t: 'call' }>,
): void {
  const problem = frameProblem(run, message);
  if (problem !== undefined) {
    finishRun(state, run, problem);
    return;
  }
  const { name, argsJson, callId } = message;
  let args: JsonValue;
  try {
    args = JSON.parse(argsJson) as JsonValue;
  } catch {
    reply(state, run, handle, callId, errorEnvelope('INVALID_ARGUMENTS', 'the arguments are not valid JSON'));
    return;
  }
  if (!cleanArguments(args, argsJson)) {
    const message = `Invalid arguments for tools.${name}: they nest arrays or objects more than ${MAX_ARGUMENT_DEPTH} levels deep. Flatten them and call again.`;
    reply(state, run, handle, callId, errorEnvelope('INVALID_ARGUMENTS', message));
    return;
  }
  if (run.pending >= run.limits.maxInFlight) run.waitingCalls.push({ name, args, callId });
  else void brokerCall(state, run, handle, { name, args, callId });
}

/**
 * Why a call frame ends its run: not a call of this run's bindings (a worker that sends one is
 * broken or hostile), or one call too many or too large (counted here, whatever the worker says).
 */
function frameProblem(run: HostRun, message: Extract<WorkerToHost, { t: 'call' }>): Settled | undefined {
  const { name, argsJson, callId } = message;
  if (
    typeof name !== 'string' ||
    !run.bindings.has(name) ||
    typeof argsJson !== 'string' ||
    typeof callId !== 'number'
  ) {
    return failed('crash', 'the isolate worker sent a malformed call');
  }
  if (++run.callCount > run.limits.maxCalls || argsJson.length > run.limits.maxCallBytes)
    return failed('limit', `call limits exceeded (${run.limits.maxCalls} calls)`);
  return undefined;
}

/** Hands one call to onCall and its settlement back to the program; then the next waiting call. */
async function brokerCall(
  state: HostState,
  run: HostRun,
  handle: WorkerHandle,
  call: WaitingCall,
): Promise<void> {
  const release = run.pending++ === 0 ? releaseWhileWaiting(state, run, handle) : undefined;
  if (run.pending > run.maxPending) run.maxPending = run.pending;
  let envelope: string;
  try {
    const value = await run.request.onCall(call.name, call.args, run.calls.signal);
    envelope = valueEnvelope(value, run.limits.maxCallResultBytes);
  } catch (error) {
    envelope = errorEnvelope(isSandboxError(error) ? error.code : 'TOOL_FAILED', messageOf(error));
  } finally {
    run.pending--;
    if (release !== undefined) clearTimeout(release);
  }
  reply(state, run, handle, call.callId, envelope);
  const next = run.calls.signal.aborted ? undefined : run.waitingCalls.shift();
  if (next !== undefined) void brokerCall(state, run, handle, next);
}

/** Replies of one tick leave in one frame (see outbox.ts); a settled run's replies go nowhere. */
function reply(state: HostState, run: HostRun, handle: WorkerHandle, callId: number, envelope: string): void {
  if (!run.settled) state.supervisor.post(handle, { t: 'result', id: run.id, callId, envelope });
}

/**
 * Arms the release of the run's dedicated worker for when its waiting lasts INLINE_RELEASE_MS.
 * Once released, the worker takes other runs again and enters this run's isolate on the thread
 * pool from then on.
 */
function releaseWhileWaiting(
  state: HostState,
  run: HostRun,
  handle: WorkerHandle,
): NodeJS.Timeout | undefined {
  if (handle.inlineRun !== run.id) return undefined;
  const timer = setTimeout(() => {
    if (run.settled || run.pending === 0 || handle.inlineRun !== run.id) return;
    // The worker answers `released` from its event loop: proof that no inline entry of this run
    // holds its thread, and that none will from then on. Only then does it take other runs.
    state.supervisor.post(handle, { t: 'release', id: run.id });
  }, INLINE_RELEASE_MS);
  run.timers.push(timer);
  return timer;
}

const errorEnvelope = (code: string, message: string): string =>
  JSON.stringify({ ok: false, error: { code: clip(code, 64), message: clip(message, MAX_ERROR_CHARS) } });

/** Serialise a host value for the isolate; the size is checked here, before anything is copied in. */
const valueEnvelope = (value: JsonValue | undefined, maxBytes: number): string => {
  let json: string | undefined;
  try {
    json = value === undefined ? undefined : JSON.stringify(value);
  } catch {
    return errorEnvelope('TOOL_FAILED', 'the tool returned a value that is not JSON');
  }
  if (json === undefined) return '{"ok":true}';
  if (json.length > maxBytes) {
    return errorEnvelope(
      'LIMIT_EXCEEDED',
      `the tool result is ${json.length} bytes of JSON, over the ${maxBytes}-byte limit for programs`,
    );
  }
  return `{"ok":true,"value":${json}}`;
};
