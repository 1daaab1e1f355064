// The batch scheduler: calls start in model order; consecutive concurrency-safe calls share a
// bounded pool; an exclusive call waits for the pool to drain and runs alone; results come back in
// model order, and reach the durable log in model order too (the log is the replay source: a
// result that settles early waits in memory for the ones before it, never for a call that logs
// no result because its call was not recorded; inner calls log as they settle). Classification
// happens once, at preparation, from the validated arguments. A batch of several calls answers
// with at most its budget of outputs (./answer-budget.ts); the log has every result whole.
import type { EventLog, SessionEventInput } from '../store/types.ts';
import { answerBudget } from './answer-budget.ts';
import type { CallEnv, Prepared } from './call-env.ts';
import { tryAppend } from './call-log.ts';
import { createGate } from './gate.ts';
import { prepare, runPrepared } from './pipeline.ts';
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

/** A root call that logs no result (its tool.call was not recorded): nothing to wait for. */
const UNLOGGED = Symbol('unlogged');

/**
 * The env whose root results are logged in the order of `calls`; unchanged for one call, without a
 * log, or when two calls share an id (then nothing tells their results apart). A call that logs no
 * result (the store refused its call) must not hold the results after it back for good.
 */
const inModelOrder = (env: CallEnv, calls: readonly ToolCall[]): CallEnv => {
  const index = new Map(calls.map((call, i) => [call.id, i]));
  const log = env.log;
  if (log === undefined || calls.length < 2 || index.size !== calls.length) return env;
  const held: (SessionEventInput | typeof UNLOGGED | undefined)[] = new Array(calls.length);
  let next = 0;
  const hold = (i: number, entry: SessionEventInput | typeof UNLOGGED) => {
    held[i] = entry;
    for (let ready = held[next]; ready !== undefined; ready = held[next]) {
      if (ready !== UNLOGGED) void tryAppend(log, ready);
      held[next++] = undefined;
    }
  };
  function logResult(target: EventLog, event: SessionEventInput): void {
    const i = event.parentCallId === undefined ? index.get(event.callId ?? '') : undefined;
    if (i === undefined || held[i] !== undefined || i < next) return void tryAppend(target, event);
    hold(i, event);
  }
  function unlogged(callId: string, parentCallId: string | undefined): void {
    const i = parentCallId === undefined ? index.get(callId) : undefined;
    if (i !== undefined && held[i] === undefined && i >= next) hold(i, UNLOGGED);
  }
  return { ...env, logResult, unlogged };
};

export const runBatch = async (
  env: CallEnv,
  calls: readonly ToolCall[],
  options: RunOptions = {},
): Promise<ToolResult[]> => {
  // A single call needs no pool.
  if (calls.length === 1) return [await runPrepared(env, prepareOne(env, calls[0] as ToolCall, options))];
  const gate = createGate(env.concurrency);
  const ordered = inModelOrder(env, calls);
  // Each result is answered whole or without its output as it finishes (./answer-budget.ts), so a
  // batch never holds more than its budget of outputs until the last call is done.
  const budget = answerBudget();
  const pending: Promise<ToolResult>[] = new Array(calls.length);
  for (let i = 0; i < calls.length; i++) {
    const p = prepareOne(ordered, calls[i] as ToolCall, options);
    pending[i] = gate.run(p.safe, () => runPrepared(ordered, p)).then(budget.take);
  }
  return Promise.all(pending);
};
