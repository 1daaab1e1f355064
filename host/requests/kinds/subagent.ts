// `subagent`: a workflow's agent() step, run by the client (the default SpawnProvider,
// host/tools/workflow/request-spawner.ts). The client answers with the subagent's final text:
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
  /** The workflow's meta.name. */
  workflow: v.string(),
  phase: v.optional(v.string()),
  provider: v.optional(v.string()),
  model: v.optional(v.string()),
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
