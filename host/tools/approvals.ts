// The approvals port that `ask` decisions go through, and its adapter over the RequestStore: an
// `approval` host request (host/requests/kinds/approval.ts) the client answers over HTTP.
// Invariant: anything but an explicit `{ allow: true }` answer before expiry is a denial; an aborted
// caller cancels the request.
import type { JsonValue } from '../json.ts';
import { approvalKind, awaitRequest, type RequestStore } from '../requests/index.ts';

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

export const createRequestApprovals = (
  store: RequestStore,
  options: RequestApprovalsOptions = {},
): Approvals => {
  const ttlMs = options.ttlMs ?? 300_000;
  return {
    request: ({ sessionId, callId, toolName, arguments: args, reason, signal }) =>
      awaitRequest(
        store,
        approvalKind,
        {
          sessionId,
          callId,
          payload: { toolName, arguments: (args ?? null) as JsonValue, reason },
          ttlMs,
          now: options.now,
        },
        signal,
      ),
  };
};
