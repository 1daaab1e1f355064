// The batch scheduler: calls start in model order; consecutive concurrency-safe calls share a
// bounded pool; an exclusive call waits for the pool to drain and runs alone; results come back in
// model order. Classification happens once, at preparation, from the validated arguments.
import { createGate } from './gate.ts';
import { type CallEnv, type Prepared, prepare, runPrepared } from './pipeline.ts';
import type { ToolCall, ToolDefinition, ToolError, ToolResult } from './types.ts';

export interface RunOptions {
  /** Run this definition for every call instead of looking names up (code mode's run_code). */
  definition?: ToolDefinition;
  /** Settle every call with this failure without running it (a tool the mode does not expose). */
  refuse?: (call: ToolCall) => ToolError;
}

export const runBatch = (
  env: CallEnv,
  calls: readonly ToolCall[],
  options: RunOptions = {},
): Promise<ToolResult[]> => {
  const gate = createGate(env.concurrency);
  const pending: Promise<ToolResult>[] = new Array(calls.length);
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i] as ToolCall;
    const p: Prepared =
      options.refuse === undefined
        ? prepare(env, call, undefined, options.definition)
        : {
            call,
            parentCallId: undefined,
            registration: undefined,
            definition: undefined,
            args: undefined,
            failure: options.refuse(call),
            version: env.state.version,
            safe: true,
          };
    pending[i] = calls.length === 1 ? runPrepared(env, p) : gate.run(p.safe, () => runPrepared(env, p));
  }
  return Promise.all(pending);
};
