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

const prepareOne = (env: CallEnv, call: ToolCall, options: RunOptions): Prepared =>
  options.refuse === undefined
    ? prepare(env, call, undefined, options.definition)
    : {
        call,
        parentCallId: undefined,
        provenance: env.provenance,
        registration: undefined,
        definition: undefined,
        args: undefined,
        failure: options.refuse(call),
        version: env.state.version,
        safe: true,
      };

export const runBatch = async (
  env: CallEnv,
  calls: readonly ToolCall[],
  options: RunOptions = {},
): Promise<ToolResult[]> => {
  // A single call needs no pool.
  if (calls.length === 1) return [await runPrepared(env, prepareOne(env, calls[0] as ToolCall, options))];
  const gate = createGate(env.concurrency);
  const pending: Promise<ToolResult>[] = new Array(calls.length);
  for (let i = 0; i < calls.length; i++) {
    const p = prepareOne(env, calls[i] as ToolCall, options);
    pending[i] = gate.run(p.safe, () => runPrepared(env, p));
  }
  return Promise.all(pending);
};
