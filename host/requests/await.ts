// Asking the client: makes a request of one kind, waits until it settles and lets the kind turn the
// settlement into the caller's result. Invariants: a payload its kind does not describe is never
// stored; a wait that ends by abort cancels its request (and rejects), so nothing stays pending for
// a caller that is gone.
import * as v from 'valibot';
import { SandboxError } from '../errors.ts';
import type { JsonValue } from '../json.ts';
import type { RequestKind, Settlement } from './kind.ts';
import type { HostRequest, RequestStore } from './port.ts';

export interface AwaitRequestInput<Payload> {
  sessionId: string;
  /** The call the request belongs to (root or inner). */
  callId: string;
  payload: Payload;
  /** How long the client has to answer. */
  ttlMs: number;
  /** Clock, for tests. Default Date.now. */
  now?: () => number;
}

/** Resolves with what the kind makes of the settled request; rejects on abort or when the kind fails it. */
export const awaitRequest = async <Payload, Answer, Outcome>(
  store: RequestStore,
  kind: RequestKind<Payload, Answer, Outcome>,
  input: AwaitRequestInput<Payload>,
  signal?: AbortSignal,
): Promise<Outcome> => {
  signal?.throwIfAborted();
  const checked = v.safeParse(kind.payload, input.payload);
  if (!checked.success) {
    throw new SandboxError(
      'INTERNAL',
      `A ${kind.name} request was made with a payload its kind does not describe.`,
      {
        data: { issues: checked.issues.map((i) => ({ path: v.getDotPath(i) ?? '', message: i.message })) },
      },
    );
  }
  const payload = checked.output;
  const request = await store.create({
    sessionId: input.sessionId,
    kind: kind.name,
    callId: input.callId,
    payload: payload as JsonValue,
    expiresAt: (input.now ?? Date.now)() + input.ttlMs,
  });
  let settled: HostRequest;
  try {
    settled = await store.wait(request.id, signal);
  } catch (error) {
    // The wait's own error is what the caller needs; a cancel that fails leaves the request to expire.
    await store.cancel(request.id).catch(() => false);
    throw error;
  }
  return kind.settle(settlementOf(kind, settled, payload, input.ttlMs));
};

const settlementOf = <Payload, Answer>(
  kind: RequestKind<Payload, Answer>,
  settled: HostRequest,
  payload: Payload,
  ttlMs: number,
): Settlement<Payload, Answer> => {
  if (settled.state === 'expired' || settled.state === 'cancelled')
    return { state: settled.state, payload, ttlMs };
  const answer = v.safeParse(kind.answer, settled.answer);
  return answer.success
    ? { state: 'answered', payload, ttlMs, answer: answer.output }
    : { state: 'malformed', payload, ttlMs, answer: settled.answer };
};
