// The one host pipeline every call goes through, root or inner, in seed order:
//   lookup + argument validation → tools/pre-execute waterfall → monotonic guards → (ask → approvals)
//   → tools/execute wrappers → body (exec.signal) → output validation, render (or the body's own
//   content, withContent in ./content.ts), projectContent → tools/post-execute → finalizeContent
//   → tools/result (observe) → durable log.
// Arguments nested deeper than MAX_ARGUMENT_DEPTH are refused before validation (INVALID_ARGUMENTS),
// so no later stage walks an unbounded depth; so are arguments a closed schema does not name
// (./arguments.ts), so that no validator strips what the model asked for. Likewise every tool's
// result (builtin, plugin, MCP, remote, code mode) is held to MAX_VALUE_DEPTH as it leaves the
// body, before output validation and render walk it, and again only if a tools/execute wrapper or
// a post-execute policy put another value in its place (TOOL_FAILED, `tooDeep`): no value nested
// past it is validated, rendered, logged or served. Producers that know more keep their own checks
// (their messages say what was deep).
// Invariants: a call never throws out of `runPrepared`, it settles as a frozen ToolResult; a failed
// call's content is exactly `Error: <message>`; cancellation before the body is
// ABORTED_BEFORE_DISPATCH, after the body started it replaces only a successful outcome (ABORTED);
// denials, wrapper and tool failures, post-policy failures and TOOL_TIMEOUT stay as they are; a
// post-execute policy that replaces the content and not the value redacts: the value stays in memory
// for the call's own consumer (non-enumerable) and is never logged or served (`redacted: true`).
// A tools/execute wrapper may retry (compose.ts): one call still settles as one result and one
// `tool.result` event, which counts the attempts (`attempts`, when more than one); failed attempts
// are not logged on their own, inner calls they made are (numbered on, so their ids stay unique).
import { messageOf } from '../errors.ts';
import { follows } from '../follow-signal.ts';
import { closedArgumentNames, unknownArgumentsIssue } from './arguments.ts';
import type { CallEnv, Prepared } from './call-env.ts';
import { callEvent, recordCall, resultEvent, tryAppend } from './call-log.ts';
import { errorContent, isContent, isWithContent } from './content.ts';
import { createGate, type Gate } from './gate.ts';
import type { CallView, ExecuteView, Outcome } from './hooks.ts';
import { MAX_ARGUMENT_DEPTH, MAX_VALUE_DEPTH, nestedDeeperThan } from './json-walk.ts';
import { chainsOf, dispatchOf, visibleOf } from './layers.ts';
import { beforeDispatch, fail, failed, tooDeep, toToolError, unknownTool } from './outcomes.ts';
import type { Registration } from './resolved-set.ts';
import { decide, postExecute } from './stages.ts';
import type {
  CallProvenance,
  ExecContext,
  JsonValue,
  ToolCall,
  ToolDefinition,
  ToolError,
  ToolResult,
  Validation,
} from './types.ts';

interface InternalView extends ExecuteView {
  readonly env: CallEnv;
  readonly prepared: Prepared;
  readonly callerSignal: AbortSignal;
  started: boolean;
  /** Bodies entered so far (a tools/execute wrapper may retry). */
  attempts: number;
  /** Inner calls made so far, over every attempt, so that their ids stay unique in the log. */
  innerCalls: number;
  /** The last value runBody held to MAX_VALUE_DEPTH (the same value is not walked again). */
  bounded?: unknown;
}

/** An outcome whose value is not `bounded` (already walked) and nests past MAX_VALUE_DEPTH fails. */
const withinDepth = (outcome: Outcome, name: string, bounded: unknown): Outcome =>
  outcome.ok && outcome.value !== bounded && nestedDeeperThan(outcome.value, MAX_VALUE_DEPTH)
    ? failed(tooDeep(name))
    : outcome;

/** The execution lookup: the set's admitted registration, or why the name cannot run now. */
export const lookup = (env: CallEnv, name: string): Registration | ToolError => {
  const set = env.toolSet;
  if (set?.disposed) {
    return fail(
      'ABORTED_BEFORE_DISPATCH',
      `The tool set of this step was disposed before ${name} started; repeat the call in a new step.`,
    );
  }
  const registration = visibleOf(env.state, env.layer).get(name);
  if (registration === undefined) return unknownTool(name);
  if (
    set === undefined
      ? registration.when !== undefined
      : set.scopeId !== env.layer.id || !set.admits(registration)
  ) {
    if (set !== undefined && registration.when === undefined && set.scopeId === env.layer.id) {
      // Registered (or replaced) after the set was resolved: the step never showed it.
      return fail(
        'UNKNOWN_TOOL',
        `Tool ${name} is not in this step's tool set: it was added or replaced after the step was resolved. Describe a new step to call it.`,
      );
    }
    return unknownTool(name);
  }
  return registration;
};

const deepFreeze = (value: unknown): unknown => {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key in value) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
};

export const prepare = (
  env: CallEnv,
  call: ToolCall,
  parentCallId?: string,
  override?: ToolDefinition,
  provenance: CallProvenance | undefined = env.provenance,
): Prepared => {
  const version = env.state.version;
  let registration: Registration | undefined;
  let definition = override;
  let failure: ToolError | undefined;
  let args: unknown;
  let safe = true; // a call that cannot run touches nothing, so it never needs to be alone
  if (definition === undefined) {
    const found = lookup(env, call.name);
    if ('code' in found) failure = found;
    else {
      registration = found;
      definition = found.definition;
    }
  }
  if (definition !== undefined && nestedDeeperThan(call.arguments, MAX_ARGUMENT_DEPTH)) {
    // Validators, deepFreeze, policies and the log all walk arguments: the depth is bounded first.
    failure = fail(
      'INVALID_ARGUMENTS',
      `Invalid arguments for ${call.name}: they nest arrays or objects more than ${MAX_ARGUMENT_DEPTH} levels deep. Flatten them and call again.`,
    );
  } else if (definition !== undefined) {
    const unknown = unknownArgumentsIssue(
      call.name,
      closedArgumentNames(definition.parameters),
      call.arguments,
    );
    const parsed: Validation<unknown> =
      unknown === undefined ? definition.validateArguments(call.arguments) : { ok: false, issues: [unknown] };
    if (parsed.ok) {
      args = deepFreeze(parsed.value);
      try {
        safe = definition.isConcurrencySafe?.(args) === true;
      } catch {
        safe = false;
      }
    } else {
      failure = fail(
        'INVALID_ARGUMENTS',
        `Invalid arguments for ${call.name}: ${parsed.issues.join('; ')}. Fix them and call again.`,
      );
    }
  }
  return { call, parentCallId, provenance, registration, definition, args, failure, version, safe };
};

/** The innermost dispatch: the tool body, then output validation, render and projectContent. */
export const runBody = async (outer: ExecuteView): Promise<Outcome> => {
  const view = outer as InternalView;
  const { env, prepared, callerSignal } = view;
  const definition = prepared.definition as ToolDefinition;
  const name = prepared.call.name;
  // A wrapper may replace the signal; the caller's cancellation must still reach the body (a
  // signal that follows the caller's already does: ../follow-signal.ts).
  const signal = follows(view.signal, callerSignal)
    ? view.signal
    : AbortSignal.any([callerSignal, view.signal]);
  // Every attempt re-checks: a retry after cancellation, disposal or replacement does not start.
  if (signal.aborted)
    return failed(callerSignal.aborted ? beforeDispatch(name) : toToolError(signal.reason, signal, name));
  const changed = view.attempts > 0 ? stale(env, prepared) : undefined;
  if (changed !== undefined) return failed(changed);
  view.started = true;
  view.attempts++;
  let value: unknown;
  try {
    value = await definition.execute(prepared.args, execContext(view, signal));
  } catch (error) {
    return failed(toToolError(error, signal, name));
  }
  const own = isWithContent(value) ? value : undefined;
  const raw = own === undefined ? value : own.value;
  // Before anything walks it: validators and renderers recurse, the log serialises.
  if (nestedDeeperThan(raw, MAX_VALUE_DEPTH)) return failed(tooDeep(name));
  const checked = definition.validateOutput(raw);
  if (!checked.ok) {
    return failed(
      fail(
        'TOOL_FAILED',
        `Tool ${name} returned output that does not match its declared schema: ${checked.issues.join('; ')}.`,
      ),
    );
  }
  try {
    let content = own === undefined ? definition.render(prepared.args, checked.value) : own.content;
    if (definition.projectContent !== undefined)
      content = definition.projectContent(prepared.args, checked.value, content);
    if (!isContent(content))
      return failed(
        fail(
          'TOOL_FAILED',
          `Tool ${name} rendered invalid content; renderers must return text or image parts.`,
        ),
      );
    view.bounded = checked.value; // a validator's output of a bounded value (our own schemas)
    return { ok: true, value: checked.value as JsonValue, content };
  } catch (error) {
    return failed(fail('TOOL_FAILED', `Tool ${name} could not render its result: ${messageOf(error)}`));
  }
};

/** What one attempt's body receives: a fresh context, its inner calls numbered on from the last attempt's. */
const execContext = (view: InternalView, signal: AbortSignal): ExecContext => {
  const { env, prepared } = view;
  const callId = prepared.call.id;
  let gate: Gate | undefined;
  // The env of the last extra signal: a program passes the same one on every call, and
  // AbortSignal.any per call would cost more than the rest of the inner call.
  let joined: { extra: AbortSignal | undefined; env: CallEnv } | undefined;
  const innerEnvOf = (extra: AbortSignal | undefined): CallEnv => {
    if (joined !== undefined && joined.extra === extra) return joined.env;
    const innerSignal = extra ? AbortSignal.any([signal, extra]) : signal;
    const innerEnv: CallEnv = innerSignal === env.signal ? env : { ...env, signal: innerSignal };
    joined = { extra, env: innerEnv };
    return innerEnv;
  };
  const exec: ExecContext = {
    signal,
    callId,
    agent: env.agent,
    toolSet: env.toolSet,
    callTool(name, args, options) {
      // An inner call ends with its parent, and also with the program that made it (options.signal).
      const innerEnv = innerEnvOf(options?.signal);
      const call = { id: `${callId}.${++view.innerCalls}`, name, arguments: args };
      const inner = prepare(
        innerEnv,
        call,
        callId,
        options?.definition,
        options?.provenance ?? prepared.provenance,
      );
      gate ??= createGate(env.concurrency);
      return gate.run(inner.safe, () => runPrepared(innerEnv, inner));
    },
  };
  if (prepared.parentCallId !== undefined) exec.parentCallId = prepared.parentCallId;
  return exec;
};

/** Re-checks a lookup made before awaiting: replaced, restricted or disposed registrations stop here. */
const stale = (env: CallEnv, prepared: Prepared): ToolError | undefined => {
  if (prepared.registration === undefined) return undefined;
  if (env.state.version === prepared.version && !env.toolSet?.disposed) return undefined;
  const found = lookup(env, prepared.call.name);
  if ('code' in found) return found;
  return found === prepared.registration
    ? undefined
    : fail('UNKNOWN_TOOL', `Tool ${prepared.call.name} changed before the call started; call it again.`);
};

const settle = (
  env: CallEnv,
  prepared: Prepared,
  view: CallView | undefined,
  outcome: Outcome,
  start: number,
  attempts = 1,
): ToolResult => {
  const { call } = prepared;
  let result: ToolResult;
  if (outcome.ok) {
    let content = outcome.content;
    const finalize = prepared.definition?.finalizeContent;
    if (finalize !== undefined) {
      try {
        const finalContent = finalize(prepared.args, content, outcome.value);
        if (!isContent(finalContent)) throw new Error('finalizeContent returned invalid content');
        content = finalContent;
      } catch (error) {
        return settle(
          env,
          prepared,
          view,
          failed(
            fail('TOOL_FAILED', `Tool ${call.name} could not finalize its content: ${messageOf(error)}`),
          ),
          start,
          attempts,
        );
      }
    }
    result = {
      id: call.id,
      name: call.name,
      ok: true,
      content,
      value: outcome.value,
      durationMs: performance.now() - start,
    };
    if (outcome.value === undefined) delete result.value;
    else if (outcome.redacted) {
      // In memory for the call's own consumer only: JSON (API, log, plugins' events) drops it.
      Object.defineProperty(result, 'value', { value: outcome.value, enumerable: false });
      result.redacted = true;
    }
  } else {
    const content = errorContent(outcome.error.message);
    result = {
      id: call.id,
      name: call.name,
      ok: false,
      content,
      error: outcome.error,
      durationMs: performance.now() - start,
    };
  }
  if (attempts > 1) result.attempts = attempts;
  Object.freeze(result);
  for (const observer of chainsOf(env.state, env.layer).result) {
    try {
      observer(view, result);
    } catch {
      // Observers cannot change or fail a settled call.
    }
  }
  if (env.log !== undefined) {
    const event = resultEvent(env.agent.sessionId, result, prepared.parentCallId, prepared.provenance);
    if (env.logResult === undefined) void tryAppend(env.log, event);
    else env.logResult(env.log, event);
  }
  return result;
};

/** Cancellation replaces only a successful outcome; which code depends on whether the body started. */
const cancelled = (env: CallEnv, view: InternalView, outcome: Outcome): Outcome => {
  if (!outcome.ok || !env.signal.aborted) return outcome;
  const name = view.call.name;
  return failed(view.started ? fail('ABORTED', `Tool ${name} was cancelled.`) : beforeDispatch(name));
};

/** Runs one prepared call to a settled result. Never throws. */
export const runPrepared = async (env: CallEnv, prepared: Prepared): Promise<ToolResult> => {
  const start = performance.now();
  const { call, definition } = prepared;
  const unrecorded =
    env.log === undefined
      ? undefined
      : await recordCall(
          env.log,
          callEvent(
            env.agent.sessionId,
            call.id,
            call.name,
            call.arguments,
            prepared.parentCallId,
            prepared.provenance,
          ),
          call.name,
        );
  // A call that was not recorded leaves nothing in the log, not even its result.
  if (unrecorded !== undefined) {
    env.unlogged?.(call.id, prepared.parentCallId);
    return settle({ ...env, log: undefined }, prepared, undefined, failed(unrecorded), start);
  }
  if (prepared.failure !== undefined || definition === undefined) {
    return settle(env, prepared, undefined, failed(prepared.failure ?? unknownTool(call.name)), start);
  }
  const view: CallView = {
    id: call.id,
    name: call.name,
    arguments: prepared.args,
    parentCallId: prepared.parentCallId,
    agent: env.agent,
    definition,
    toolSet: env.toolSet,
  };
  let outcome: Outcome;
  let attempts = 1;
  const chains = chainsOf(env.state, env.layer);
  // Fast path: with no pre-execute listeners and no guards there is nothing to decide or await.
  const policed = chains.pre.length > 0 || chains.guards.length > 0;
  try {
    const refused = env.signal.aborted
      ? beforeDispatch(call.name)
      : (stale(env, prepared) ?? (policed ? await decide(env, prepared, view) : undefined));
    const blocked = refused ?? (env.signal.aborted ? beforeDispatch(call.name) : stale(env, prepared));
    if (blocked !== undefined) return settle(env, prepared, view, failed(blocked), start);
    const execute: InternalView = {
      call: view,
      signal: env.signal,
      env,
      prepared,
      callerSignal: env.signal,
      started: false,
      attempts: 0,
      innerCalls: 0,
    };
    try {
      outcome = await dispatchOf(env.state, env.layer)(execute);
    } catch (error) {
      outcome = failed(toToolError(error, execute.signal, call.name));
    }
    attempts = Math.max(1, execute.attempts);
    // A wrapper may answer with a value of its own, a policy may replace it: each is bounded too.
    outcome = cancelled(env, execute, withinDepth(outcome, call.name, execute.bounded));
    if (chains.post.length > 0) {
      const before = outcome.ok ? outcome.value : undefined;
      outcome = withinDepth(await postExecute(env, view, outcome), call.name, before);
    }
    outcome = cancelled(env, execute, outcome);
  } catch (error) {
    outcome = failed(fail('TOOL_FAILED', messageOf(error)));
  }
  return settle(env, prepared, view, outcome, start, attempts);
};
