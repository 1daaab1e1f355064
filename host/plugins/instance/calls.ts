// Calls across the instance's boundary, both ways: the host's calls into the plugin (a tool's
// execute, a provider's query) with the plugin's answers to them (`done`), and the plugin's own tool
// calls out through the capabilities, answered with a result envelope.
// Invariants: a call into the plugin settles exactly once — answered, timed out after the limits'
// callWallMs, cancelled by its caller, or rejected when the instance ends (state.ts `finish`); its
// arguments and the plugin's results are capped at maxValueBytes of JSON and in nesting (its calls'
// arguments held to what the HTTP surface lets through: host/isolates/arguments.ts); the plugin's
// own calls are aborted with the instance, or with the call into it that made them.
import { isSandboxError, messageOf, SandboxError } from '../../errors.ts';
import { followSignal } from '../../follow-signal.ts';
import {
  cleanArguments,
  MAX_ARGUMENT_DEPTH,
  MAX_VALUE_DEPTH,
  nestedDeeperThan,
} from '../../isolates/arguments.ts';
import type { PluginWorkerToHost } from '../protocol.ts';
import { clip, MAX_ERROR_CHARS } from '../protocol.ts';
import type { JsonValue } from '../types.ts';
import { type InstanceState, post } from './state.ts';

/** Calls the tool or provider registered under `token`; settles with the plugin's answer. */
export function executeIn(
  state: InstanceState,
  token: number,
  args: JsonValue,
  call: { callId: string; signal: AbortSignal },
): Promise<JsonValue> {
  const { id, pluginId, limits } = state.options;
  return new Promise<JsonValue>((resolve, reject) => {
    if (state.ended) {
      return reject(new SandboxError('ABORTED', `Plugin ${pluginId} is not running.`));
    }
    const argsJson = JSON.stringify(args ?? {});
    if (argsJson.length > limits.maxValueBytes) {
      return reject(
        new SandboxError('LIMIT_EXCEEDED', `The arguments are over ${limits.maxValueBytes} bytes of JSON.`),
      );
    }
    const entry = ++state.nextEntry;
    const controller = new AbortController();
    const settle = () => {
      clearTimeout(timer);
      call.signal.removeEventListener('abort', onAbort);
      state.executes.delete(entry);
      controller.abort();
    };
    const timer = setTimeout(() => {
      settle();
      reject(
        new SandboxError(
          'TOOL_TIMEOUT',
          `The plugin's tool or inspection method did not finish within ${limits.callWallMs} ms (its wall-clock budget).`,
        ),
      );
    }, limits.callWallMs);
    const onAbort = () => {
      settle();
      reject(new SandboxError('ABORTED', 'The call was cancelled.'));
    };
    if (call.signal.aborted) return onAbort();
    call.signal.addEventListener('abort', onAbort, { once: true });
    state.executes.set(entry, {
      resolve: (value) => {
        settle();
        resolve(value);
      },
      reject: (error) => {
        settle();
        reject(error);
      },
      callId: call.callId,
      controller,
    });
    post(state, { t: 'execute', id, entry, token, argsJson, callId: call.callId });
  });
}

/** The plugin answered a call into it: its envelope is read as untrusted text. */
export function onDone(state: InstanceState, message: Extract<PluginWorkerToHost, { t: 'done' }>): void {
  const pending = state.executes.get(message.entry);
  if (pending === undefined) return;
  let parsed: { ok?: unknown; value?: JsonValue; error?: { name?: unknown; message?: unknown } };
  try {
    parsed = JSON.parse(message.envelope);
  } catch {
    return void pending.reject(
      new SandboxError('TOOL_FAILED', 'The plugin tool returned an unreadable result.'),
    );
  }
  if (parsed.ok === true) {
    if (nestedDeeperThan(parsed.value, MAX_VALUE_DEPTH))
      return void pending.reject(
        new SandboxError(
          'TOOL_FAILED',
          `The plugin tool returned a value nested more than ${MAX_VALUE_DEPTH} levels deep.`,
        ),
      );
    return void pending.resolve(parsed.value ?? null);
  }
  const name = typeof parsed.error?.name === 'string' ? parsed.error.name : 'Error';
  const text = typeof parsed.error?.message === 'string' ? parsed.error.message : '';
  pending.reject(
    new SandboxError('TOOL_FAILED', clip(name === 'Error' ? text : `${name}: ${text}`, MAX_ERROR_CHARS)),
  );
}

/** The plugin calls a tool: run it through the capabilities and post the result envelope back. */
export async function onCall(
  state: InstanceState,
  message: Extract<PluginWorkerToHost, { t: 'call' }>,
): Promise<void> {
  const { id, limits, capabilities } = state.options;
  const parent = message.entry === 0 ? undefined : state.executes.get(message.entry);
  // Ends with the instance, and with the call it is made inside (no composite AbortSignal.any per call).
  const follower = parent ? followSignal(state.own.signal, parent.controller.signal) : undefined;
  const signal = follower?.signal ?? state.own.signal;
  state.callsOut++;
  let envelope: string;
  try {
    const args = JSON.parse(message.argsJson) as JsonValue;
    if (!cleanArguments(args, message.argsJson))
      throw new SandboxError(
        'INVALID_ARGUMENTS',
        `Invalid arguments for ${message.name}: they nest arrays or objects more than ${MAX_ARGUMENT_DEPTH} levels deep. Flatten them and call again.`,
      );
    const request = { name: message.name, args, ...(parent ? { parentCallId: parent.callId } : {}) };
    const value = await capabilities.callTool(request, signal);
    envelope = JSON.stringify({ ok: true, value: value ?? null });
    if (envelope.length > limits.maxValueBytes) {
      envelope = JSON.stringify({
        ok: false,
        error: {
          code: 'LIMIT_EXCEEDED',
          message: `the result of ${message.name} is over ${limits.maxValueBytes} bytes of JSON`,
        },
      });
    }
  } catch (error) {
    const code = isSandboxError(error) ? error.code : 'TOOL_FAILED';
    envelope = JSON.stringify({
      ok: false,
      error: { code, message: clip(messageOf(error), MAX_ERROR_CHARS) },
    });
  }
  follower?.release();
  state.callsOut--;
  if (parent === undefined) state.looseEntryAt = performance.now();
  post(state, { t: 'result', id, callId: message.callId, envelope });
}
