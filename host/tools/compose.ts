// The tools/execute wrapper chain: a tiny guarded koa-style compose. Calling `next()` twice from one
// wrapper throws (a retrying wrapper must not run the body behind the pipeline's back twice);
// with no wrappers the body runs directly.
import { SandboxError } from '../errors.ts';
import type { ExecuteView, ExecuteWrapper, Outcome } from './hooks.ts';

export type Dispatch = (view: ExecuteView) => Promise<Outcome>;

export const compose = (wrappers: readonly ExecuteWrapper[], body: Dispatch): Dispatch => {
  if (wrappers.length === 0) return body;
  return (view) => {
    let index = -1;
    const step = (i: number): Promise<Outcome> => {
      if (i <= index) {
        return Promise.reject(
          new SandboxError('TOOL_FAILED', 'A tools/execute wrapper called next() more than once.'),
        );
      }
      index = i;
      const wrapper = wrappers[i];
      if (wrapper === undefined) return body(view);
      try {
        return Promise.resolve(wrapper(view, () => step(i + 1)));
      } catch (error) {
        return Promise.reject(error);
      }
    };
    return step(0);
  };
};
