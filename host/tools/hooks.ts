// Pipeline hook phases and the shapes their listeners see. The phase list is closed: registering
// a listener for any other name fails at registration (CONFIG_INVALID), never at the first call.
// Decisions and actions are discriminated unions so every branch is handled explicitly.
import { type ErrorCode, SandboxError } from '../errors.ts';
import type { ResolvedToolSet } from './resolved-set.ts';
import type { AgentScope, ContentPart, JsonValue, ToolDefinition, ToolError, ToolResult } from './types.ts';

/** The frozen view of the call every listener sees. Arguments are the validated, frozen ones. */
export interface CallView {
  readonly id: string;
  readonly name: string;
  readonly arguments: unknown;
  readonly parentCallId: string | undefined;
  readonly agent: AgentScope;
  readonly definition: ToolDefinition;
  readonly toolSet: ResolvedToolSet | undefined;
}

export type Decision =
  /** Run the call. */
  | { kind: 'allow' }
  /** Refuse it; `reason` is what the model reads, `userReason` what a person reads. */
  | { kind: 'deny'; reason: string; userReason?: string }
  /** Ask a person through the approvals port before running it. */
  | { kind: 'ask'; reason: string };

/** tools/pre-execute: a waterfall; return a decision to replace the current one, nothing to keep it. */
export type PreExecuteListener = (
  call: CallView,
  current: Decision,
) => Decision | undefined | Promise<Decision | undefined>;

/**
 * A monotonic synchronous guard: a returned reason denies the call (DENIED, or the code it names);
 * nothing later undoes it.
 */
export type Guard = (call: CallView) => string | GuardDenial | undefined | null | false;

/** A denial under its own stable code (e.g. PLAN_MODE), so clients can tell it from a policy's. */
export interface GuardDenial {
  code: ErrorCode;
  reason: string;
}

/** The outcome of dispatch, before post-execute policies. */
export type Outcome =
  /**
   * The body returned a valid value; `content` is its rendered (projected) form. `redacted`: a
   * post-execute policy replaced the content but not the value, so the value is never stored or served.
   */
  | { ok: true; value: JsonValue; content: ContentPart[]; redacted?: true }
  /** Anything failed; `error.message` is what the model will read. */
  | { ok: false; error: ToolError };

/** The mutable view a tools/execute wrapper gets; only the signal may be replaced. */
export interface ExecuteView {
  readonly call: CallView;
  signal: AbortSignal;
}

/**
 * tools/execute: koa-style around-dispatch wrapper. `next()` runs one attempt (the rest of the chain
 * and the body); call it again after an attempt settled to retry, never while one is in flight.
 * Each attempt re-checks the signal; the result counts the attempts (`attempts`, when more than one).
 */
export type ExecuteWrapper = (view: ExecuteView, next: () => Promise<Outcome>) => Promise<Outcome>;

export type PostExecuteAction =
  /**
   * Replace the content and/or the canonical value of a successful call (ignored for failures).
   * Replacing the content alone redacts: the old value stays in memory for the call's own consumer
   * only, and is neither logged nor returned by the API. Replace the value too to remove it entirely.
   */
  | { kind: 'replace'; content?: ContentPart[]; value?: JsonValue }
  /** Turn the call into a DENIED failure; `feedback` is what the model reads. */
  | { kind: 'block'; feedback: string; userReason?: string }
  /** Append context parts after a successful call's content, in listener order (ignored for failures). */
  | { kind: 'attach'; contexts: ContentPart[] };

/** tools/post-execute: inspect the outcome so far; return an action or nothing. */
export type PostExecuteListener = (
  call: CallView,
  outcome: Readonly<Outcome>,
) => PostExecuteAction | undefined | Promise<PostExecuteAction | undefined>;

/** tools/result: observe the frozen final result; return values and throws are ignored. */
export type ResultListener = (call: CallView | undefined, result: Readonly<ToolResult>) => void;

export interface PhaseListeners {
  'tools/pre-execute': PreExecuteListener;
  'tools/execute': ExecuteWrapper;
  'tools/post-execute': PostExecuteListener;
  'tools/result': ResultListener;
}

export type Phase = keyof PhaseListeners;

export const PHASES: readonly Phase[] = [
  'tools/pre-execute',
  'tools/execute',
  'tools/post-execute',
  'tools/result',
];

export const checkPhase = (phase: string, listener: unknown): Phase => {
  if (!(PHASES as readonly string[]).includes(phase)) {
    throw new SandboxError(
      'CONFIG_INVALID',
      `Unknown hook phase "${phase}"; use one of ${PHASES.join(', ')}.`,
    );
  }
  if (typeof listener !== 'function') {
    throw new SandboxError('CONFIG_INVALID', `The ${phase} listener must be a function.`);
  }
  return phase as Phase;
};

/** The effective listeners of one scope, resolved once per registry change, not per call. */
export interface HookChains {
  pre: PreExecuteListener[];
  guards: Guard[];
  wrappers: ExecuteWrapper[];
  post: PostExecuteListener[];
  result: ResultListener[];
}

export const emptyChains = (): HookChains => ({ pre: [], guards: [], wrappers: [], post: [], result: [] });
