// `remote_tool`: a call of a tool whose body runs in the client (host/agents/remote-tools.ts). The
// client answers `{ result }` or `{ error }` (`{ output }`, the name some harnesses use, is the
// result too). Invariants: an error answer, an unanswered request (REQUEST_EXPIRED) and a cancelled
// one (ABORTED) fail the call; what the client answered is never dropped.
import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import type { JsonValue } from '../../json.ts';
import { ErrorAnswer, errorMessageOf, OutputAnswer, ResultAnswer } from '../answers.ts';
import { defineRequestKind, jsonValue } from '../kind.ts';

export const remoteToolKind = defineRequestKind({
  name: 'remote_tool',
  payload: v.object({ toolName: v.string(), arguments: jsonValue }),
  // `{ output }` is the result under another name: it used to read as null, losing the answer.
  answers: [ResultAnswer, ErrorAnswer, OutputAnswer],
  wrongAnswer: 'Answer with { "result": … } or { "error": … }.',
  settle(settlement): JsonValue {
    const name = settlement.payload.toolName;
    switch (settlement.state) {
      case 'answered':
        if ('error' in settlement.answer)
          throw new SandboxError('TOOL_FAILED', errorMessageOf(settlement.answer));
        return (
          'result' in settlement.answer
            ? (settlement.answer.result ?? null)
            : (settlement.answer.output ?? null)
        ) as JsonValue;
      case 'malformed':
        throw new SandboxError(
          'TOOL_FAILED',
          `The client answered the ${name} call with something other than { result } or { error }.`,
        );
      case 'expired':
        throw new SandboxError(
          'REQUEST_EXPIRED',
          `The client did not answer the ${name} call within ${settlement.ttlMs} ms.`,
        );
      case 'cancelled':
        throw new SandboxError('ABORTED', `The ${name} call was cancelled before the client answered.`);
    }
  },
});
