// The approvals port that `ask` decisions go through, and its adapter over the RequestStore: an
// `approval` host request the client answers over HTTP. Invariant: anything but an explicit
// `{ allow: true }` answer before expiry is a denial; an aborted caller cancels the request.

import type { JsonValue } from '../json.ts';
import { awaitRequest } from '../store/await-request.ts';
import type { RequestStore } from '../store/types.ts';

export interface ApprovalRequest {
  sessionId: string;
  callId: string;
  toolName: string;
  arguments: unknown;
  /** Why policy asks, shown to the person deciding. */
  reason: string;
  signal: AbortSignal;
}

export interface ApprovalAnswer {
  allow: boolean;
  /** Why the person decided so; a denial's reason reaches the model. */
  reason?: string;
}

export interface Approvals {
  /** Resolves with the decision; rejects only when `signal` aborts. */
  request(request: ApprovalRequest): Promise<ApprovalAnswer>;
}

export interface RequestApprovalsOptions {
  /** How long a person has to answer. Default 300,000 ms (5 minutes). */
  ttlMs?: number;
  /** Clock, for tests. Default Date.now. */
  now?: () => number;
}

const readAnswer = (answer: JsonValue | undefined): ApprovalAnswer => {
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer))
    return { allow: false, reason: 'the approval answer was malformed' };
  const reason = typeof answer.reason === 'string' ? answer.reason : undefined;
  return answer.allow === true
    ? { allow: true }
    : reason === undefined
      ? { allow: false }
      : { allow: false, reason };
};

export const createRequestApprovals = (
  store: RequestStore,
  options: RequestApprovalsOptions = {},
): Approvals => {
  const ttlMs = options.ttlMs ?? 300_000;
  const now = options.now ?? Date.now;
  return {
    async request({ sessionId, callId, toolName, arguments: args, reason, signal }) {
      signal.throwIfAborted();
      const settled = await awaitRequest(
        store,
        {
          sessionId,
          kind: 'approval',
          callId,
          payload: { toolName, arguments: (args ?? null) as JsonValue, reason },
          expiresAt: now() + ttlMs,
        },
        signal,
      );
      if (settled.state === 'answered') return readAnswer(settled.answer);
      return {
        allow: false,
        reason:
          settled.state === 'expired'
            ? 'nobody answered the approval request in time'
            : 'the approval request was cancelled',
      };
    },
  };
};
