// Runs one workflow script: a fresh isolate from the shared isolate host, the runtime of
// program.ts, and an onCall broker that turns the script's `agent()` and `phase()` into inner calls
// of the workflow call (exec.callTool with steps.ts's definitions). Caps: agent() calls per workflow
// (past it the run is stopped, so a script cannot catch its way around the cap) and agent() calls
// at once (the run's pending-call cap: further ones wait in the isolate host until one settles).
// Invariant: a failed run throws one CODE_RUN_FAILED whose message reads
// `workflow failed (<kind>): <message>[\nCaptured output:\n<lines>]`, with `data.kind`.
import { SandboxError } from '../../errors.ts';
import { compileProgram, type FailureKind, type IsolateHost, type RunLimits } from '../../isolates/index.ts';
import type { ExecContext, JsonValue } from '../types.ts';
import { scriptFrames, WORKFLOW_BINDINGS, workflowProgram } from './program.ts';
import { agentStep, phaseStep } from './steps.ts';

export interface WorkflowMeta {
  name: string;
  description: string;
  whenToUse?: string;
  phases?: Array<{ title: string; detail?: string; provider?: string; model?: string }>;
}

export interface WorkflowInput {
  script: string;
  meta: WorkflowMeta;
  args?: { [key: string]: JsonValue };
}

/** A workflow's canonical value: its log lines, the phases it entered and its return value. */
export interface WorkflowValue {
  logs: string[];
  phases: string[];
  value?: JsonValue;
}

export interface WorkflowRunnerOptions {
  /** Where scripts run. Never closed here; its owner does. */
  isolates: IsolateHost;
  /** agent() calls per workflow. Default 64. */
  maxAgents?: number;
  /** agent() calls running at once; more wait. Default 8. */
  maxConcurrentAgents?: number;
  /** Isolate limits over the host's defaults; default wallMs here is 1,800,000 (subagents are slow). */
  limits?: Partial<RunLimits>;
}

export const DEFAULT_WORKFLOW_WALL_MS = 1_800_000;
const MAX_PHASES = 256;

export const workflowFailed = (kind: FailureKind, message: string, logs: readonly string[]): SandboxError => {
  const head = `workflow failed (${kind}): ${message}`;
  return new SandboxError(
    'CODE_RUN_FAILED',
    logs.length > 0 ? `${head}\nCaptured output:\n${logs.join('\n')}` : head,
    { data: { kind } },
  );
};

type JsonObject = { [key: string]: JsonValue };
const isObject = (value: JsonValue): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export const createWorkflowRunner = (options: WorkflowRunnerOptions): WorkflowRunner => {
  const maxAgents = options.maxAgents ?? 64;
  const maxConcurrent = options.maxConcurrentAgents ?? 8;
  const limits: Partial<RunLimits> = {
    wallMs: DEFAULT_WORKFLOW_WALL_MS,
    ...options.limits,
    maxInFlight: maxConcurrent,
  };

  const run = async (input: WorkflowInput, exec: ExecContext): Promise<WorkflowValue> => {
    const tenantId = exec.agent.services.tenantId;
    const owner = typeof tenantId === 'string' ? tenantId : undefined;
    const checked = await compileProgram(input.script, 'js', owner);
    if (!checked.ok) throw workflowFailed(checked.kind ?? 'compile', checked.message, []);
    const stop = new AbortController();
    const signal = AbortSignal.any([exec.signal, stop.signal]);
    const phases: string[] = [];
    let agents = 0;
    let stopped: { kind: FailureKind; message: string } | undefined;
    const phaseMeta = new Map((input.meta.phases ?? []).map((p) => [p.title, p]));

    const step = async (name: 'agent' | 'phase', args: JsonValue, callSignal: AbortSignal) => {
      const definition = name === 'agent' ? agentStep : phaseStep;
      const result = await exec.callTool(name, args, { signal: callSignal, definition });
      if (!result.ok) {
        const error = result.error ?? { code: 'TOOL_FAILED' as const, message: `${name} failed.` };
        throw new SandboxError(error.code, error.message);
      }
      return result.value ?? null;
    };

    const onCall = async (name: string, args: JsonValue, callSignal: AbortSignal): Promise<JsonValue> => {
      if (!isObject(args)) throw new SandboxError('INVALID_ARGUMENTS', `${name}() takes an object.`);
      if (name === 'phase') {
        if (phases.length >= MAX_PHASES)
          throw new SandboxError('LIMIT_EXCEEDED', `more than ${MAX_PHASES} phase() calls in one workflow`);
        if (typeof args.title === 'string') phases.push(args.title);
        return step('phase', args, callSignal);
      }
      if (name !== 'agent') throw new SandboxError('UNKNOWN_TOOL', `${name} is not a workflow primitive.`);
      if (++agents > maxAgents) {
        // Stop the whole run: an error thrown into the script could be caught and ignored.
        stopped ??= {
          kind: 'limit',
          message: `more than ${maxAgents} agent() calls in one workflow; split the work into fewer, larger steps`,
        };
        stop.abort();
        throw new SandboxError('LIMIT_EXCEEDED', stopped.message);
      }
      const phase = typeof args.phase === 'string' ? phaseMeta.get(args.phase) : undefined;
      const merged: JsonObject = { ...args, workflow: input.meta.name };
      if (merged.provider === undefined && phase?.provider !== undefined) merged.provider = phase.provider;
      if (merged.model === undefined && phase?.model !== undefined) merged.model = phase.model;
      return step('agent', merged, callSignal);
    };

    const outcome = await options.isolates.run({
      code: workflowProgram(input.script),
      language: 'js',
      bindings: WORKFLOW_BINDINGS,
      globals: { args: input.args ?? {} },
      onCall,
      limits,
      signal,
      // A workflow waits on subagents for minutes: a worker of its own would sit idle for it.
      inline: false,
      ...(owner === undefined ? {} : { owner }),
    });
    if (stopped !== undefined) throw workflowFailed(stopped.kind, stopped.message, outcome.logs);
    if (!outcome.ok) {
      const message =
        outcome.kind === 'runtime' ? scriptFrames(outcome.message, input.script) : outcome.message;
      throw workflowFailed(outcome.kind, message, outcome.logs);
    }
    const value: WorkflowValue = { logs: outcome.logs, phases };
    if (outcome.value !== undefined) value.value = outcome.value;
    return value;
  };
  return Object.assign(run, { maxAgents, maxConcurrentAgents: maxConcurrent });
};

/** Runs one workflow; carries its caps so that the tool description states them. */
export interface WorkflowRunner {
  (input: WorkflowInput, exec: ExecContext): Promise<WorkflowValue>;
  readonly maxAgents: number;
  readonly maxConcurrentAgents: number;
}
