// The code-mode (PTC) executor: the model sees one tool, run_code, whose description embeds the
// `tools.*` SDK generated from the visible tools; each run_code call runs its program in a fresh
// isolate (host/isolates) and every `tools.*` call re-enters the shared pipeline as a log-only inner
// call of run_code, against the batch's tool set. The program call itself goes through the pipeline
// too (validated, policed, logged), so a policy can stop a program before it runs.
// State: the SDK cache only; nothing per batch outlives the batch.
import type { FailureKind, IsolateHost, RunLimits } from '../../isolates/index.ts';
import type { PtcExecutor } from '../executor.ts';
import type { ToolError, ToolResult } from '../types.ts';
import { createBridge } from './bridge.ts';
import { codeRunFailed, type RunCodeValue, runCodeDefinition, runCodeSchema } from './run-code.ts';
import { bindableOf, createSdkCache } from './sdk-cache.ts';

export interface PtcExecutorOptions {
  /** Where programs run. The executor never closes it; its owner does. */
  isolates: IsolateHost;
  /** Per-run limits over the isolate host's defaults (see RunLimits). Default: the host's. */
  limits?: Partial<RunLimits>;
  /** Image parts from inner calls attached to one run_code result. Default 8. */
  maxImages?: number;
  /** Distinct tool lists whose generated SDK is kept. Default 32. */
  sdkCacheSize?: number;
}

/** A failed run_code result's error: CODE_RUN_FAILED carries which way the run failed. */
export interface CodeRunError extends ToolError {
  code: 'CODE_RUN_FAILED';
  data: { kind: FailureKind };
}

export const createPtcExecutor = (options: PtcExecutorOptions): PtcExecutor => {
  const { isolates, limits } = options;
  const maxImages = options.maxImages ?? 8;
  const sdks = createSdkCache(options.sdkCacheSize);

  return {
    name: 'ptc',
    kind: 'ptc',
    describe: (definitions) => [runCodeSchema(sdks.get(definitions).description)],
    async execute(batch) {
      const definitions = bindableOf(batch.definitions());
      const sdk = sdks.get(definitions);
      // Kinds of failed runs by call id, so the API result can say how a run failed.
      const failures = new Map<string, FailureKind>();
      const runCode = runCodeDefinition(async (args, exec) => {
        const bridge = createBridge(sdk, definitions, exec);
        const outcome = await isolates.run({
          code: args.code,
          language: 'ts',
          bindings: bridge.bindings,
          onCall: bridge.onCall,
          isConcurrencySafe: bridge.isConcurrencySafe,
          ...(limits === undefined ? {} : { limits }),
          signal: exec.signal,
        });
        if (!outcome.ok) {
          failures.set(exec.callId, outcome.kind);
          throw codeRunFailed(outcome.kind, outcome.message, outcome.logs);
        }
        const value: RunCodeValue = { logs: outcome.logs };
        if (outcome.value !== undefined) value.value = outcome.value;
        return { value, images: bridge.images() };
      }, maxImages);
      const results = await batch.run(batch.calls, { definition: runCode });
      return results.map((result) => withKind(result, failures.get(result.id)));
    },
  };
};

/** Adds `data.kind` to a CODE_RUN_FAILED result (results are frozen, so this is a copy). */
const withKind = (result: ToolResult, kind: FailureKind | undefined): ToolResult => {
  if (kind === undefined || result.ok || result.error?.code !== 'CODE_RUN_FAILED') return result;
  const error: CodeRunError = { ...result.error, code: 'CODE_RUN_FAILED', data: { kind } };
  return Object.freeze({ ...result, error });
};
