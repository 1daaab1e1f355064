// The default SpawnProvider: each subagent is a durable `subagent` host request
// (host/requests/kinds/subagent.ts) the client answers by running the subagent
// (POST /v1/agents/:id/requests/:rid with { result } or { error }), the same machinery as remote
// tools. Invariants: an aborted step cancels its request; an unanswered request fails the step at
// its expiry (REQUEST_EXPIRED); a malformed answer fails only this step.
import { awaitRequest, type RequestStore, type SubagentPayload, subagentKind } from '../../requests/index.ts';
import type { SpawnProvider } from './spawn.ts';

export const SUBAGENT_TIMEOUT_MS = 1_800_000;

export interface RequestSpawnerOptions {
  /** How long the client has to answer one subagent request. Default 1,800,000 ms (30 minutes). */
  ttlMs?: number;
  /** Clock, for tests. Default Date.now. */
  now?: () => number;
}

export const createRequestSpawner = (
  requests: RequestStore,
  options: RequestSpawnerOptions = {},
): SpawnProvider => ({
  spawn({ signal, sessionId, callId, ...step }) {
    const payload: SubagentPayload = { prompt: step.prompt, workflow: step.workflow };
    for (const key of ['phase', 'provider', 'model'] as const) {
      const value = step[key];
      if (value !== undefined) payload[key] = value;
    }
    return awaitRequest(
      requests,
      subagentKind,
      { sessionId, callId, payload, ttlMs: options.ttlMs ?? SUBAGENT_TIMEOUT_MS, now: options.now },
      signal,
    );
  },
});
