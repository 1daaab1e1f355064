// Waiting on a request in the shared RequestStore core (request-core.ts): in-process waiters, the
// poller that re-reads waited requests so an answer written by another process sharing the
// database still wakes them, and close.
// Invariants: a waiter settles exactly once (its request settles, its signal aborts, or the store
// closes with SHUTTING_DOWN) and leaves `waiters` and drops its abort listener when it does; a
// waiter joins `waiters` before the request is read, so a settle landing while the read is in
// flight still wakes it; close clears every timer and rejects every waiter but leaves stored state
// untouched.
import { SandboxError } from '../errors.ts';
import type { HostRequest } from '../requests/port.ts';
import { getRequest } from './request-expiry.ts';
import { type RequestCoreState, report, stopPolling, wake } from './request-state.ts';

function startPolling(state: RequestCoreState): void {
  if (state.poller !== undefined) return;
  let busy = false; // a slow store: one round at a time
  const poll = async () => {
    for (const id of [...state.waiters.keys()]) {
      const current = await getRequest(state, id);
      if (current !== undefined && current.state !== 'pending') wake(state, current);
    }
  };
  state.poller = setInterval(() => {
    if (busy) return;
    busy = true;
    report(
      state,
      poll().finally(() => {
        busy = false;
      }),
    );
  }, state.options.pollMs ?? 1000).unref();
}

export function waitFor(
  state: RequestCoreState,
  id: string,
  signal: AbortSignal | undefined,
): Promise<HostRequest> {
  const { waiters } = state;
  return new Promise<HostRequest>((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(id, signal));
    if (state.closed) {
      // Nobody could wake a waiter now: a settled request still resolves, a pending one cannot.
      getRequest(state, id).then((request) => {
        if (request === undefined) reject(notFound(id));
        else if (request.state !== 'pending') resolve(request);
        else reject(new SandboxError('SHUTTING_DOWN', 'the request store is closed'));
      }, reject);
      return;
    }
    const set = waiters.get(id) ?? new Set();
    waiters.set(id, set);
    const leave = () => {
      signal?.removeEventListener('abort', onAbort);
      set.delete(waiter);
      if (set.size === 0 && waiters.get(id) === set) waiters.delete(id);
      if (waiters.size === 0) stopPolling(state);
    };
    const onAbort = () => {
      leave();
      reject(abortError(id, signal!));
    };
    const waiter = {
      resolve: (r: HostRequest) => {
        leave();
        resolve(r);
      },
      reject: (e: unknown) => {
        leave();
        reject(e);
      },
    };
    set.add(waiter);
    signal?.addEventListener('abort', onAbort, { once: true });
    startPolling(state);
    getRequest(state, id).then((request) => {
      if (request === undefined) waiter.reject(notFound(id));
      else if (request.state !== 'pending') waiter.resolve(request);
    }, waiter.reject);
  });
}

export function closeRequests(state: RequestCoreState): void {
  state.closed = true;
  stopPolling(state);
  for (const timer of state.timers.values()) clearTimeout(timer);
  state.timers.clear();
  const error = new SandboxError('SHUTTING_DOWN', 'the request store closed while waiting');
  for (const set of state.waiters.values()) for (const waiter of set) waiter.reject(error);
  state.waiters.clear();
}

const notFound = (id: string) =>
  new SandboxError('NOT_FOUND', `no request ${id}`, { data: { requestId: id } });

const abortError = (id: string, signal: AbortSignal) =>
  new SandboxError('ABORTED', `stopped waiting for request ${id}`, {
    cause: signal.reason,
    data: { requestId: id },
  });
