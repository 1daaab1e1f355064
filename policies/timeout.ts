// timeoutPolicy: enforces a definition's declared `timeoutMs` (or a default) as a tools/execute
// wrapper, the only place deadlines are enforced. On expiry it aborts the body's signal with a
// TOOL_TIMEOUT reason and settles the call as TOOL_TIMEOUT without waiting for a body that ignores
// cancellation (its late result is dropped).
import * as v from 'valibot';
import { SandboxError } from '../host/errors.ts';
import { type ExecuteWrapper, followSignal, type Outcome } from '../host/tools/index.ts';
import { type Policy, parseConfig } from './types.ts';

const Config = v.strictObject({
  /** Deadline for tools that declare none. Default: none (such tools run without a deadline). */
  defaultMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(86_400_000))),
});

export type TimeoutPolicyConfig = v.InferInput<typeof Config>;

export const timeoutWrapper =
  (defaultMs: number | undefined): ExecuteWrapper =>
  (view, next) => {
    const ms = view.call.definition.timeoutMs ?? defaultMs;
    if (ms === undefined) return next();
    // Follows the signal it was given (the caller's cancellation still reaches the body), without a
    // composite AbortSignal.any per call (host/follow-signal.ts).
    const { controller, release } = followSignal(view.signal);
    view.signal = controller.signal;
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<Outcome>((resolve) => {
      timer = setTimeout(() => {
        const error = new SandboxError('TOOL_TIMEOUT', `Tool ${view.call.name} timed out after ${ms} ms`);
        controller.abort(error);
        resolve({ ok: false, error: { code: error.code, message: error.message } });
      }, ms);
    });
    return Promise.race([next(), expired]).finally(() => {
      clearTimeout(timer);
      release();
    });
  };

export const timeoutPolicy = (config: TimeoutPolicyConfig = {}): Policy => {
  const parsed = parseConfig('timeout', Config, config);
  return {
    name: 'timeout',
    config: parsed.defaultMs === undefined ? {} : { defaultMs: parsed.defaultMs },
    install: (scope) => scope.on('tools/execute', timeoutWrapper(parsed.defaultMs)),
  };
};
