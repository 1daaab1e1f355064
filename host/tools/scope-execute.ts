// A scope's batch execution (registry.ts wires it into each ToolScope): the call environment of
// one batch, and the executor each call goes to by presentation mode. Batches pick the current
// executor for the mode when they start. Invariants: in code mode only run_code is callable
// directly (anything else is UNKNOWN_TOOL); a mixed batch runs as consecutive segments, one after
// another, so the scheduler's order and barriers hold; results come back in call order.
import { runBatch } from './batch.ts';
import type { CallEnv } from './call-env.ts';
import type { Executor, ExecutorBatch } from './executor.ts';
import { executorOf, type Layer, RESERVED_NAME, type RegistryOptions, type RegistryState } from './layers.ts';
import type { ExecuteOptions } from './scope-types.ts';
import { checkMode, definitionsOf, noExecutor } from './scope-view.ts';
import type { ToolCall, ToolResult } from './types.ts';

export const NEVER = new AbortController().signal;

function batchOf(env: CallEnv, calls: readonly ToolCall[]): ExecutorBatch {
  return {
    calls,
    agent: env.agent,
    toolSet: env.toolSet,
    signal: env.signal,
    definitions: () => definitionsOf(env.state, env.layer, env.toolSet, true),
    run: (subset, runOptions) => runBatch(env, subset, runOptions),
  };
}

export async function executeIn(
  state: RegistryState,
  layer: Layer,
  concurrency: number,
  calls: readonly ToolCall[],
  executeOptions: ExecuteOptions,
): Promise<ToolResult[]> {
  const options: RegistryOptions = state.options;
  const mode = checkMode(executeOptions.mode ?? 'native');
  const env: CallEnv = {
    state,
    layer,
    agent: executeOptions.agent,
    toolSet: executeOptions.toolSet,
    signal: executeOptions.signal ?? NEVER,
    log: executeOptions.log === null ? undefined : (executeOptions.log ?? options.log),
    approvals: options.approvals,
    concurrency: executeOptions.concurrency ?? concurrency,
    ...(executeOptions.provenance ? { provenance: executeOptions.provenance } : {}),
  };
  const native = mode === 'code' ? undefined : executorOf(layer, 'native');
  if (mode !== 'code' && native === undefined) throw noExecutor('native', layer);
  if (mode === 'native') return (native as Executor).execute(batchOf(env, calls));
  const ptc = executorOf(layer, 'ptc');
  if (ptc === undefined) throw noExecutor('ptc', layer);
  // Split into consecutive runs by executor; run_code is exclusive, so running the segments one
  // after another keeps the scheduler's order and barriers.
  const results: ToolResult[] = [];
  for (let i = 0; i < calls.length; ) {
    const program = (calls[i] as ToolCall).name === RESERVED_NAME;
    let j = i + 1;
    while (j < calls.length && ((calls[j] as ToolCall).name === RESERVED_NAME) === program) j++;
    const segment = calls.slice(i, j);
    if (program) results.push(...(await ptc.execute(batchOf(env, segment))));
    else if (native !== undefined) results.push(...(await native.execute(batchOf(env, segment))));
    else {
      results.push(
        ...(await runBatch(env, segment, {
          refuse: (call) => ({
            code: 'UNKNOWN_TOOL',
            message: `Only run_code is callable in code mode; call ${call.name} as tools.${call.name}() inside a program.`,
          }),
        })),
      );
    }
    i = j;
  }
  return results;
}
