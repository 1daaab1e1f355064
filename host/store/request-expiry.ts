// Settling and expiry of the shared RequestStore core (request-core.ts): logging a request this
// process settled, expiring one past its expiresAt, and the expiry timers.
// Invariants: a pending request past its expiresAt is never answered and reads as expired (every
// read goes through expireIfDue); a timer that fires early, or for an expiry beyond what
// setTimeout can hold, re-arms; a request another process settled wakes its waiters here too; a
// timer's store work is asynchronous and reports its failures (report), never leaving a rejection
// unhandled. Every settle made here is published on the wake-up bus (`request` and the id), so a
// waiter in another process wakes at once rather than at its next poll.
import type { HostRequest } from '../requests/port.ts';
import { emit, type RequestCoreState, report, wake } from './request-state.ts';

// setTimeout fires at most 2^31-1 ms ahead; longer expiries re-arm.
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * This process settled the request: log it, wake waiters here, then tell other processes (the
 * wake-up bus); resolves once they are told (the bus never rejects).
 */
export function settled(state: RequestCoreState, request: HostRequest): Promise<void> {
  if (request.state === 'answered')
    emit(state, request, 'request.answered', { answer: request.answer ?? null });
  else emit(state, request, `request.${request.state}`, {});
  wake(state, request);
  return state.options.wake?.publish('request', request.id) ?? Promise.resolve();
}

export async function expireIfDue(state: RequestCoreState, request: HostRequest): Promise<HostRequest> {
  const { backend, now } = state;
  if (request.state !== 'pending' || request.expiresAt > now()) return request;
  const expired = await backend.settle(request.id, 'expired', now());
  if (expired !== undefined) {
    void settled(state, expired);
    return expired;
  }
  return (await backend.get(request.id)) ?? request;
}

/** The timer of a request came due: settled elsewhere, early, or expired now. */
async function onTimer(state: RequestCoreState, id: string): Promise<void> {
  const current = await state.backend.get(id);
  if (current === undefined) return;
  if (current.state !== 'pending') return wake(state, current); // settled by another process
  if (current.expiresAt > state.now())
    arm(state, current); // fired early, or a long expiry re-arming
  else await expireIfDue(state, current);
}

export function arm(state: RequestCoreState, request: HostRequest): void {
  if (state.closed) return;
  const { now, timers } = state;
  const delay = request.expiresAt - now();
  if (delay <= 0) {
    report(state, expireIfDue(state, request));
    return;
  }
  const timer = setTimeout(
    () => {
      timers.delete(request.id);
      report(state, onTimer(state, request.id));
    },
    Math.min(delay, MAX_TIMER_MS),
  ).unref();
  timers.set(request.id, timer);
}

export async function getRequest(state: RequestCoreState, id: string): Promise<HostRequest | undefined> {
  const request = await state.backend.get(id);
  return request === undefined ? undefined : expireIfDue(state, request);
}
