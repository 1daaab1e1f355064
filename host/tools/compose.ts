// The tools/execute wrapper chain: a tiny guarded koa-style compose. A wrapper may call `next()`
// again once the previous attempt settled (a retry: each attempt goes through the rest of the
// chain and the body, which re-checks the signal), but never while one is in flight and never
// after the wrapper itself settled (no attempt runs behind the pipeline's back). With no wrappers
// the body runs directly.
import { SandboxError } from '../errors.ts';
import type { ExecuteView, ExecuteWrapper, Outcome } from './hooks.ts';

export type Dispatch = (view: ExecuteView) => Promise<Outcome>;

const refused = (message: string): Promise<Outcome> =>
  Promise.reject(new SandboxError('TOOL_FAILED', `A tools/execute wrapper ${message}.`));

export const compose = (wrappers: readonly ExecuteWrapper[], body: Dispatch): Dispatch => {
  if (wrappers.length === 0) return body;
  return (view) => {
    const step = (i: number): Promise<Outcome> => {
      const wrapper = wrappers[i];
      if (wrapper === undefined) return body(view);
      let inFlight = false;
      let settled = false;
      const next = (): Promise<Outcome> => {
        if (settled) return refused('called next() after it returned');
        if (inFlight) return refused('called next() again before the previous attempt settled');
        inFlight = true;
        return step(i + 1).finally(() => {
          inFlight = false;
        });
      };
      let outcome: Promise<Outcome>;
      try {
        outcome = Promise.resolve(wrapper(view, next));
      } catch (error) {
        outcome = Promise.reject(error);
      }
      return outcome.finally(() => {
        settled = true;
      });
    };
    return step(0);
  };
};
