// `subagent`: a workflow's agent() step, run by the client (the default SpawnProvider,
// host/tools/workflow/request-spawner.ts), or a child agent of the service to run (subagent,
// subagent_fork, their provider aliases, spawn_teammate: host/teams/): then `agentId` names
// the child, whose loop the client runs against that agent id, with the tools GET `tools` lists;
// the child's report(output) answers the request for it. The client answers with the final text:
// `{ result: "text" }`, `{ result: { text, value? } }` (or `output` for either), or `{ error }`.
// Invariants: an error answer, a result without text, an unanswered request (REQUEST_EXPIRED) and a
// cancelled one (ABORTED) fail only this step.
import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import type { JsonValue } from '../../json.ts';
import { ErrorAnswer, errorMessageOf, OutputAnswer, ResultAnswer } from '../answers.ts';
import { defineRequestKind } from '../kind.ts';

/** The subagent's final answer: its text, and a structured value when the answer carries one. */
export interface SubagentOutput {
  text: string;
  value?: JsonValue;
}

const Output = v.union([
  v.pipe(
    v.string(),
    v.transform((text): SubagentOutput => ({ text })),
  ),
  v.pipe(
    v.object({ text: v.string(), value: v.optional(v.unknown()) }),
    v.transform(
      ({ text, value }): SubagentOutput =>
        value === undefined ? { text } : { text, value: value as JsonValue },
    ),
  ),
]);

/** The step as the script and meta resolved it; absent options are left out, not undefined. */
const Payload = v.object({
  prompt: v.string(),
  /** The workflow's meta.name (workflow steps only). */
  workflow: v.optional(v.string()),
  phase: v.optional(v.string()),
  provider: v.optional(v.string()),
  model: v.optional(v.string()),
  /** A child agent of the service: the agent whose loop the client runs (child agents only). */
  agentId: v.optional(v.string()),
  /** What the parent said the child is for. */
  description: v.optional(v.string()),
  /** `child` (subagent, subagent_fork) or `teammate` (spawn_teammate). */
  role: v.optional(v.picklist(['child', 'teammate'])),
  /** A teammate's name in its team. */
  name: v.optional(v.string()),
  /** `fork`: the child's log starts with a copy of its parent's conversation (message.* events). */
  context: v.optional(v.picklist(['fresh', 'fork'])),
  /** The parent's call returned at once; the outcome arrives as an `agent.child_finished` event. */
  background: v.optional(v.boolean()),
  /** Where the child's model-facing tools are listed: GET this path (its names are in `toolNames`). */
  tools: v.optional(v.string()),
  toolNames: v.optional(v.array(v.string())),
});
export type SubagentPayload = v.InferOutput<typeof Payload>;

export const subagentKind = defineRequestKind({
  name: 'subagent',
  payload: Payload,
  answers: [ResultAnswer, ErrorAnswer, OutputAnswer],
  wrongAnswer:
    'Answer a subagent request with { "result": "<final text>" }, { "result": { "text", "value"? } } or { "error": … }.',
  settle(settlement): SubagentOutput {
    switch (settlement.state) {
      case 'answered': {
        const { answer } = settlement;
        if ('error' in answer)
          throw new SandboxError(
            'TOOL_FAILED',
            `The subagent failed: ${errorMessageOf(answer) || 'no reason given'}`,
          );
        const output = v.safeParse(Output, 'result' in answer ? answer.result : answer.output);
        if (output.success) return output.output;
        return malformed();
      }
      case 'malformed':
        return malformed();
      case 'expired':
        throw new SandboxError(
          'REQUEST_EXPIRED',
          `Nobody answered the subagent request within ${settlement.ttlMs} ms.`,
        );
      case 'cancelled':
        throw new SandboxError('ABORTED', 'The subagent request was cancelled before the client answered.');
    }
  },
});

const malformed = (): never => {
  throw new SandboxError(
    'TOOL_FAILED',
    'The client answered the subagent request with something other than { result: "text" }, { result: { text, value? } } or { error }.',
  );
};
