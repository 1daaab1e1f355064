// Answer shapes several kinds share. Each is one member of the API's answer union (registry.ts),
// listed there once however many kinds accept it.
import * as v from 'valibot';

/** The work's result, any JSON. */
export const ResultAnswer = v.strictObject({ result: v.unknown() });

/** The work failed in the client: a message, or an object with one. */
export const ErrorAnswer = v.strictObject({
  error: v.union([v.string(), v.object({ message: v.string() })]),
});

/** `{ output }`: the subagent's result under the name some harnesses use. */
export const OutputAnswer = v.strictObject({ output: v.unknown() });

/** The client's own words from an `{ error }` answer ('' when it gave none). */
export const errorMessageOf = ({ error }: v.InferOutput<typeof ErrorAnswer>): string =>
  typeof error === 'string' ? error : error.message;
