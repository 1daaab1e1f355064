// `plugin_client_query`: cordis_inspect_query with `platform: 'client'` (seed 000): the client runs
// the plugins' client bodies, so only it can answer a query of one of its inspection providers.
// The client answers `{ result }` or `{ error }`. Invariants: an error answer, an unanswered request
// (REQUEST_EXPIRED) and a cancelled one (ABORTED) fail the query; only `{ result }` completes it.
import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import type { JsonValue } from '../../json.ts';
import { ErrorAnswer, errorMessageOf, ResultAnswer } from '../answers.ts';
import { defineRequestKind, jsonValue } from '../kind.ts';

export const pluginClientQueryKind = defineRequestKind({
  name: 'plugin_client_query',
  payload: v.object({ provider: v.string(), method: v.string(), input: v.optional(jsonValue) }),
  answers: [ResultAnswer, ErrorAnswer],
  wrongAnswer: 'Answer with { "result": … } or { "error": … }.',
  settle(settlement): JsonValue {
    const what = `${settlement.payload.provider}.${settlement.payload.method}`;
    switch (settlement.state) {
      case 'answered':
        if ('error' in settlement.answer)
          throw new SandboxError('TOOL_FAILED', errorMessageOf(settlement.answer));
        return (settlement.answer.result ?? null) as JsonValue;
      case 'malformed':
        throw new SandboxError(
          'TOOL_FAILED',
          `The client answered the query ${what} with something other than { result } or { error }.`,
        );
      case 'expired':
        throw new SandboxError(
          'REQUEST_EXPIRED',
          `The client did not answer the query ${what} within ${settlement.ttlMs} ms.`,
        );
      case 'cancelled':
        throw new SandboxError('ABORTED', `The query ${what} was cancelled before the client answered.`);
    }
  },
});
