// Waiting on a request in the shared RequestStore core (request-core.ts): in-process waiters, what
// wakes them when another process sharing the database settles their request (the wake-up bus's
// `request` wake-ups, a re-read of every waited request when the bus resyncs, and the poller: every
// pollMs without a listening bus, every backstopPollMs with one), and close.
// Invariants: a waiter settles exactly once (its request settles, its signal aborts, or the store
// closes with SHUTTING_DOWN) and leaves `waiters` and drops its abort listener when it does; a
// waiter joins `waiters` before the request is read, so a settle landing while the read is in
// flight still wakes it; close clears every timer and rejects every waiter but leaves stored state
// untouched.
import { SandboxError } from '../errors.ts';
import type { HostRequest } from '../requests/port.ts';
import { getRequest } from './request-expiry.ts';
import { type RequestCoreState, report, stopPolling, wake } from './request-state.ts';

/** Re-reads one waited request and wakes its waiters when it settled (anywhere). */
async function reread(state: RequestCoreState, id: string): Promise<void> {
  if (!state.waiters.has(id)) return;
  const current = await getRequest(state, id);
  if (current !== undefined && current.state !== 'pending') wake(state, current);
}

/** Hears other processes' settles and resyncs on the bus (when there is one). Returns the unsubscribe. */
export function listenForWakeUps(state: RequestCoreState): () => void {
  const bus = state.options.wake;
  if (bus === undefined) return () => undefined;
  // A settle made here already woke its waiters (wake() emptied the set): nothing is read again.
  const off = bus.subscribe('request', (id) => report(state, reread(state, id)));
  const offResync = bus.onResync(() => {
    for (const id of [...state.waiters.keys()]) report(state, reread(state, id));
  });
  return () => {
    off();
    offResync();
  };
}

function startPolling(state: RequestCoreState): void {
  if (state.poller !== undefined) return;
  const { options } = state;
  const pollMs = options.pollMs ?? 1000;
  const backstopMs = Math.max(pollMs, options.backstopPollMs ?? 5000);
  let busy = false; // a slow store: one round at a time
  let last = Date.now();
  const poll = async () => {
    for (const id of [...state.waiters.keys()]) await reread(state, id);
  };
  state.poller = setInterval(() => {
    if (busy) return;
    // With the bus listening, wake-ups do the work: the poll is only a backstop.
    if (options.wake?.listening() === true && Date.now() - last < backstopMs) return;
    busy = true;
    last = Date.now();
    report(
      state,
      poll().finally(() => {
        busy = false;
      }),
    );
  }, pollMs).unref();
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
