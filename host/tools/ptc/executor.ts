// The code-mode (PTC) executor: the model sees one tool, run_code, whose description embeds the
// `tools.*` SDK generated from the visible tools; each run_code call runs its program in a fresh
// isolate (host/isolates) and every `tools.*` call re-enters the shared pipeline as a log-only inner
// call of run_code, against the batch's tool set. The program call itself goes through the pipeline
// too (validated, policed, logged), so a policy can stop a program before it runs.
// State: the SDK cache only; nothing per batch outlives the batch.
import type { FailureKind, IsolateHost, RunLimits } from '../../isolates/index.ts';
import type { PtcExecutor } from '../executor.ts';
import type { AgentScope, ToolError, ToolResult } from '../types.ts';
import { createBridge } from './bridge.ts';
import {
  CODE_MODE_DEFAULTS,
  CODE_MODE_MAXIMA,
  type CodeModeBudget,
  type CodeModeRequest,
  checkCodeMode,
  resolveCodeMode,
} from './limits.ts';
import { codeRunFailed, type RunCodeValue, runCodeDefinition, runCodeSchema } from './run-code.ts';
import { bindableOf, createSdkCache } from './sdk-cache.ts';

export interface PtcExecutorOptions {
  /** Where programs run. The executor never closes it; its owner does. */
  isolates: IsolateHost;
  /**
   * Per-run limits over the isolate host's defaults (see RunLimits). Default: the host's, with
   * CODE_MODE_DEFAULTS' CPU and wall-clock budgets (programs wait on slow tools).
   */
  limits?: Partial<RunLimits>;
  /** The most CPU and wall-clock time an agent may ask for. Default CODE_MODE_MAXIMA. */
  maxima?: CodeModeBudget;
  /**
   * An agent's own budget request (its `codeMode` config). Checked against `maxima` when the
   * agent's tools are described (so at its creation: a request over them is INVALID_ARGUMENTS);
   * clipped to them when a program runs. Default: no agent asks for anything.
   */
  codeModeOf?: (agent: AgentScope) => CodeModeRequest | undefined;
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
  const { isolates } = options;
  const maxImages = options.maxImages ?? 8;
  const maxima = options.maxima ?? CODE_MODE_MAXIMA;
  const sdks = createSdkCache(options.sdkCacheSize);
  const base: RunLimits = { ...isolates.limits, ...CODE_MODE_DEFAULTS, ...options.limits };

  /** The limits of this agent's runs: the service's, with its own budget where it asked for one. */
  const limitsFor = (agent: AgentScope | undefined): RunLimits => {
    const request = agent === undefined ? undefined : options.codeModeOf?.(agent);
    return { ...base, ...resolveCodeMode(base, maxima, request) };
  };
  const stated = (limits: RunLimits) => ({
    cpuMs: limits.cpuMs,
    wallMs: limits.wallMs,
    memoryMb: limits.memoryMb,
  });

  return {
    name: 'ptc',
    kind: 'ptc',
    describe: (definitions, agent) => {
      if (agent !== undefined) checkCodeMode(options.codeModeOf?.(agent), maxima);
      return [runCodeSchema(sdks.get(definitions, stated(limitsFor(agent))).description)];
    },
    async execute(batch) {
      const definitions = bindableOf(batch.definitions());
      const limits = limitsFor(batch.agent);
      const sdk = sdks.get(definitions, stated(limits));
      // Kinds of failed runs by call id, so the API result can say how a run failed.
      const failures = new Map<string, FailureKind>();
      const runCode = runCodeDefinition(async (args, exec) => {
        const bridge = createBridge(sdk, definitions, exec);
        const outcome = await isolates.run({
          code: args.code,
          language: 'ts',
          bindings: bridge.bindings,
          onCall: bridge.onCall,
          limits,
          signal: exec.signal,
          // One tenant's programs take at most a share of the isolate workers (fairness).
          ...(typeof batch.agent?.services.tenantId === 'string'
            ? { owner: batch.agent.services.tenantId }
            : {}),
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
