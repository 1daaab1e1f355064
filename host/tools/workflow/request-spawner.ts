// The default SpawnProvider: each subagent is a durable `subagent` host request the client answers
// by running the subagent (POST /v1/agents/:id/requests/:rid with { result } or { error }), the
// same machinery as remote tools. Invariants: an aborted step cancels its request; an unanswered
// request fails the step at its expiry (REQUEST_EXPIRED); a malformed answer fails only this step.
import { SandboxError } from '../../errors.ts';
import type { JsonValue } from '../../json.ts';
import { awaitRequest } from '../../store/await-request.ts';
import type { RequestStore } from '../../store/types.ts';
import type { SpawnProvider, SpawnResult } from './spawn.ts';

export const SUBAGENT_TIMEOUT_MS = 1_800_000;

export interface RequestSpawnerOptions {
  /** How long the client has to answer one subagent request. Default 1,800,000 ms (30 minutes). */
  ttlMs?: number;
  /** Clock, for tests. Default Date.now. */
  now?: () => number;
}

type JsonObject = { [key: string]: JsonValue };
const isObject = (value: JsonValue | undefined): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `{ result: "text" }`, `{ result: { text, value? } }` (or `output` for either), or `{ error }`. */
export const readSpawnAnswer = (answer: JsonValue | undefined): SpawnResult => {
  if (isObject(answer) && answer.error !== undefined) {
    const error = answer.error;
    const message =
      typeof error === 'string'
        ? error
        : isObject(error) && typeof error.message === 'string'
          ? error.message
          : '';
    throw new SandboxError('TOOL_FAILED', `The subagent failed: ${message || 'no reason given'}`);
  }
  const result = isObject(answer) ? (answer.result ?? answer.output) : undefined;
  if (typeof result === 'string') return { text: result };
  if (isObject(result) && typeof result.text === 'string')
    return result.value === undefined ? { text: result.text } : { text: result.text, value: result.value };
  throw new SandboxError(
    'TOOL_FAILED',
    'The client answered the subagent request with something other than { result: "text" }, { result: { text, value? } } or { error }.',
  );
};

export const createRequestSpawner = (
  requests: RequestStore,
  options: RequestSpawnerOptions = {},
): SpawnProvider => {
  const ttlMs = options.ttlMs ?? SUBAGENT_TIMEOUT_MS;
  const now = options.now ?? Date.now;
  return {
    async spawn({ signal, sessionId, callId, ...step }) {
      signal.throwIfAborted();
      const payload: JsonObject = { prompt: step.prompt, workflow: step.workflow };
      for (const key of ['phase', 'provider', 'model'] as const) {
        const value = step[key];
        if (value !== undefined) payload[key] = value;
      }
      const settled = await awaitRequest(
        requests,
        { sessionId, kind: 'subagent', callId, payload, expiresAt: now() + ttlMs },
        signal,
      );
      if (settled.state === 'answered') return readSpawnAnswer(settled.answer);
      if (settled.state === 'expired')
        throw new SandboxError('REQUEST_EXPIRED', `Nobody answered the subagent request within ${ttlMs} ms.`);
      throw new SandboxError('ABORTED', 'The subagent request was cancelled before the client answered.');
    },
  };
};
