// What one batch of calls answers with in full: its results up to BATCH_ANSWER_MAX characters of
// content and value together, counted as they finish; a result that does not fit in what is left
// is answered without its output (a note saying so and where it is), its error kept. Why: a
// batch's answer is held whole in memory until it is sent, and the copies along the way (results,
// the log's rows, the JSON, its bytes) made one batch of 64 commands printing 1.1 MB each take
// ~400 MB of the control plane's heap; a tenant's 16 request slots of them pass V8's heap limit
// and end the process with every tenant's work in it. Nothing is lost: each call ran and its
// result went to the session log whole (within the tenant's log budget) before it was left out
// here. A single call is its tool's own business (each tool bounds its output).
// Invariants: a result is only ever replaced by a copy (the log's event holds the original);
// results that fit are unchanged, so a batch under the budget answers exactly as before.
import type { JsonValue } from '../json.ts';
import { MAX_VALUE_DEPTH, walkScalars } from './json-walk.ts';
import type { ToolResult } from './types.ts';

/** Characters of content and values one batch answers with in full (~8 MiB of ASCII). */
export const BATCH_ANSWER_MAX = 8 * 1024 * 1024;

/** Characters of a value's keys, strings and numbers, counted until they pass `limit` (json-walk.ts). */
function charsOf(value: JsonValue | undefined, limit: number): number {
  let size = 0;
  walkScalars(
    value,
    (text) => {
      size += text.length;
      return size <= limit;
    },
    { maxDepth: MAX_VALUE_DEPTH, maxNodes: Number.POSITIVE_INFINITY },
  );
  return size;
}

/** The characters a result's answer carries: its content and its value (a redacted value is never sent). */
export function answerChars(result: ToolResult, limit: number): number {
  let size = 0;
  for (const part of result.content) size += part.type === 'text' ? part.text.length : part.data.length;
  if (size > limit || result.redacted) return size;
  return size + charsOf(result.value, limit - size);
}

/** The result without its output, saying why and where the output is. */
const withoutOutput = (result: ToolResult, chars: number): ToolResult => {
  const { value: _value, content: _content, ...rest } = result;
  return {
    ...rest,
    content: [
      {
        type: 'text',
        text: `This call's output (${chars} characters) is left out of this answer: the batch's results passed ${BATCH_ANSWER_MAX} characters. The call ran; its whole result is in the agent's session log (its tool.result event: GET /v1/agents/:id/events). Ask for less output per call, or fewer large calls per batch.`,
      },
    ],
  };
};

/** A budget for one batch: `take` answers each result as it finishes, whole or without its output. */
export function answerBudget(max = BATCH_ANSWER_MAX): { take(result: ToolResult): ToolResult } {
  let left = max;
  return {
    take(result) {
      const chars = answerChars(result, left);
      if (chars <= left) {
        left -= chars;
        return result;
      }
      return withoutOutput(result, chars);
    },
  };
}
