// Settling and expiry of the shared RequestStore core (request-core.ts): logging a request this
// process settled, expiring one past its expiresAt, and the expiry timers.
// Invariants: a pending request past its expiresAt is never answered and reads as expired (every
// read goes through expireIfDue); a timer that fires early, or for an expiry beyond what
// setTimeout can hold, re-arms; a request another process settled wakes its waiters here too.
import type { HostRequest } from '../requests/port.ts';
import { emit, type RequestCoreState, wake } from './request-state.ts';

// setTimeout fires at most 2^31-1 ms ahead; longer expiries re-arm.
const MAX_TIMER_MS = 2 ** 31 - 1;

/** This process settled the request: log it, then wake waiters. */
export function settled(state: RequestCoreState, request: HostRequest): void {
  if (request.state === 'answered')
    emit(state, request, 'request.answered', { answer: request.answer ?? null });
  else emit(state, request, `request.${request.state}`, {});
  wake(state, request);
}

export function expireIfDue(state: RequestCoreState, request: HostRequest): HostRequest {
  const { backend, now } = state;
  if (request.state !== 'pending' || request.expiresAt > now()) return request;
  const expired = backend.settle(request.id, 'expired', now());
  if (expired !== undefined) {
    settled(state, expired);
    return expired;
  }
  return backend.get(request.id) ?? request;
}

export function arm(state: RequestCoreState, request: HostRequest): void {
  if (state.closed) return;
  const { backend, now, timers } = state;
  const delay = request.expiresAt - now();
  if (delay <= 0) {
    expireIfDue(state, request);
    return;
  }
  const timer = setTimeout(
    () => {
      timers.delete(request.id);
      const current = backend.get(request.id);
      if (current === undefined) return;
      if (current.state !== 'pending') return wake(state, current); // settled by another process
      if (current.expiresAt > now())
        arm(state, current); // fired early, or a long expiry re-arming
      else expireIfDue(state, current);
    },
    Math.min(delay, MAX_TIMER_MS),
  ).unref();
  timers.set(request.id, timer);
}

export function getRequest(state: RequestCoreState, id: string): HostRequest | undefined {
  const request = state.backend.get(id);
  return request === undefined ? undefined : expireIfDue(state, request);
}
