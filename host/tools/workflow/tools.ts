// The model-facing `workflow` and `ralph` tools (seed 000) and their registration. Both run through
// one WorkflowRunner; ralph is a built-in script (ralph.ts), not a separate code path. They are
// offered only to agents whose services carry a SpawnProvider (`subagents: true` at creation), so
// they are registered with a condition evaluated once per step.
import * as v from 'valibot';
import { defineTool } from '../define.ts';
import { type Disposer, disposer } from '../disposer.ts';
import { jsonText } from '../json-text.ts';
import type { ToolScope } from '../registry.ts';
import type { ContentPart, JsonValue, ToolDefinition } from '../types.ts';
import { toWhole } from '../whole-number.ts';
import { RALPH_DEFAULT_ROUNDS, RALPH_MAX_ROUNDS, RALPH_META, RALPH_SCRIPT } from './ralph.ts';
import {
  createWorkflowRunner,
  type WorkflowInput,
  type WorkflowRunner,
  type WorkflowRunnerOptions,
} from './runner.ts';

export const NO_WORKFLOW_OUTPUT = '(workflow completed with no output)';

const json = v.custom<JsonValue>(() => true);
const valueSchema = v.object({
  logs: v.array(v.string()),
  phases: v.array(v.string()),
  value: v.optional(json),
});

/**
 * The log lines, then the return value (a string as-is, anything else as JSON), as run_code renders;
 * the JSON is bounded by jsonText (pretty only when small and shallow).
 */
const render = (_args: unknown, value: v.InferOutput<typeof valueSchema>): ContentPart[] => {
  const parts = [...value.logs];
  if (value.value !== undefined)
    parts.push(typeof value.value === 'string' ? value.value : jsonText(value.value));
  return [{ type: 'text', text: parts.length > 0 ? parts.join('\n') : NO_WORKFLOW_OUTPUT }];
};

const text = (min: number, max: number) => v.pipe(v.string(), v.minLength(min), v.maxLength(max));

const WorkflowMeta = v.object({
  name: text(1, 200),
  description: text(0, 10_000),
  whenToUse: v.optional(text(0, 10_000)),
  phases: v.optional(
    v.pipe(
      v.array(
        v.object({
          title: text(1, 200),
          detail: v.optional(text(0, 10_000)),
          provider: v.optional(text(1, 200)),
          model: v.optional(text(1, 200)),
        }),
      ),
      v.maxLength(64),
    ),
  ),
});

export const workflowTool = (run: WorkflowRunner): ToolDefinition =>
  defineTool({
    name: 'workflow',
    description:
      'Run a JavaScript orchestration program that coordinates subagents. `script` is the body of an async ' +
      'function; its return value is the result. Only these are in scope: agent(prompt, { phase?, provider?, ' +
      "model? }) resolves to the subagent's final text (or its structured value); parallel(thunks) resolves to " +
      'their results in order; pipeline(items, ...stages) runs each item through the stages in order, items ' +
      'concurrently, results in item order; phase(title) marks the current phase; log(message) adds an output ' +
      'line; args. No tools, filesystem, network, Node.js or timer APIs: subagents do the work. ' +
      `At most ${run.maxAgents} agent() calls per workflow, ${run.maxConcurrentAgents} at a time. ` +
      'A meta.phases entry sets provider and model for the agent() calls of that phase.',
    parameters: v.object({
      script: text(1, 256 * 1024),
      meta: WorkflowMeta,
      args: v.optional(v.record(v.string(), v.unknown())),
    }),
    output: { schema: valueSchema, render },
    execute: (args, exec) => run(args as WorkflowInput, exec),
  });

export const ralphTool = (run: WorkflowRunner): ToolDefinition =>
  defineTool({
    name: 'ralph',
    description:
      `Run a fixed iterative subagent workflow: each round one subagent gets the objective and what the previous ` +
      `rounds reported, until a subagent's answer begins with DONE or maxRounds (default ${RALPH_DEFAULT_ROUNDS}, ` +
      `at most ${RALPH_MAX_ROUNDS}) rounds have run. The result says { done, rounds, report }.`,
    parameters: v.object({
      objective: text(1, 20_000),
      maxRounds: v.optional(
        v.pipe(v.number(), toWhole, v.minValue(1), v.maxValue(RALPH_MAX_ROUNDS)),
        RALPH_DEFAULT_ROUNDS,
      ),
    }),
    output: { schema: valueSchema, render },
    execute: (args, exec) =>
      run(
        {
          script: RALPH_SCRIPT,
          meta: { ...RALPH_META },
          args: { objective: args.objective, maxRounds: args.maxRounds },
        },
        exec,
      ),
  });

/** Registers workflow and ralph in `scope`, offered only to agents that can spawn subagents. */
export const registerWorkflowTools = (scope: ToolScope, options: WorkflowRunnerOptions): Disposer => {
  const run = createWorkflowRunner(options);
  const when = ({ agent }: { agent: { services: { spawn?: unknown } } }) =>
    agent.services.spawn !== undefined;
  const disposers = [workflowTool(run), ralphTool(run)].map((tool) => scope.register(tool, { when }));
  return disposer(() => {
    for (const dispose of disposers) dispose();
  });
};
