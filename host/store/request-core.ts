// The RequestStore behaviour shared by every backend: nanoid ids, first-writer-wins settling,
// expiry timers, in-process waiters and request.* events. Invariants: a request leaves `pending`
// exactly once (the backend's conditional update decides who wins); a pending request past its
// expiresAt is never answered and reads as expired; at start, overdue requests are expired and the
// rest get timers, so nothing pending is lost across a restart.
import { nanoid } from 'nanoid';
import { SandboxError } from '../errors.ts';
import type { JsonValue } from '../json.ts';
import type { HostRequest, HostRequestState, RequestStore } from '../requests/port.ts';
import type { EventLog } from './types.ts';

export type SettledState = Exclude<HostRequestState, 'pending'>;

/** Persistence for requests. All methods are synchronous. */
export interface RequestBackend {
  insert(request: HostRequest): void;
  get(id: string): HostRequest | undefined;
  list(sessionId: string, state?: HostRequestState): HostRequest[];
  /**
   * Moves a pending request to `state` if it is still pending (and, for `answered`, not past
   * `now`), returning the settled request; undefined when someone else got there first.
   */
  settle(id: string, state: SettledState, now: number, answer?: JsonValue): HostRequest | undefined;
  /** Every pending request, soonest expiry first (read at start to arm expiry timers). */
  listPending(): HostRequest[];
}

export interface RequestStoreOptions {
  /** Where request.created / answered / expired / cancelled events go. Default: nowhere. */
  events?: EventLog;
  /** Clock. Default Date.now. */
  now?: () => number;
  /**
   * While someone waits, how often to re-read waited requests, so an answer written by another
   * process sharing the database still wakes them. Default 1000 ms.
   */
  pollMs?: number;
}

export interface ClosableRequestStore extends RequestStore {
  /** Clears expiry timers and rejects waiters with SHUTTING_DOWN. Stored state is untouched. */
  close(): void;
  /** Pending requests this process holds expiry timers for (all of its store's, read at start). */
  pending(): number;
}

// setTimeout fires at most 2^31-1 ms ahead; longer expiries re-arm.
const MAX_TIMER_MS = 2 ** 31 - 1;

export const createRequestStore = (
  backend: RequestBackend,
  options: RequestStoreOptions = {},
): ClosableRequestStore => {
  const now = options.now ?? Date.now;
  const timers = new Map<string, NodeJS.Timeout>();
  const waiters = new Map<string, Set<{ resolve: (r: HostRequest) => void; reject: (e: unknown) => void }>>();
  let closed = false;

  const emit = (request: HostRequest, type: string, data: { [key: string]: JsonValue }) => {
    options.events?.append([
      {
        sessionId: request.sessionId,
        type,
        surface: 'log-only',
        callId: request.callId,
        data: { requestId: request.id, ...data },
      },
    ]);
  };

  /** Resolves the waiters of a request that is no longer pending (settled here or elsewhere). */
  const wake = (request: HostRequest) => {
    clearTimeout(timers.get(request.id));
    timers.delete(request.id);
    const set = waiters.get(request.id);
    waiters.delete(request.id);
    for (const waiter of set ?? []) waiter.resolve(request);
    if (waiters.size === 0) stopPolling();
  };

  /** This process settled the request: log it, then wake waiters. */
  const settled = (request: HostRequest) => {
    if (request.state === 'answered') emit(request, 'request.answered', { answer: request.answer ?? null });
    else emit(request, `request.${request.state}`, {});
    wake(request);
  };

  let poller: NodeJS.Timeout | undefined;
  const stopPolling = () => {
    clearInterval(poller);
    poller = undefined;
  };
  const startPolling = () => {
    if (poller !== undefined) return;
    poller = setInterval(() => {
      for (const id of [...waiters.keys()]) {
        const current = get(id);
        if (current !== undefined && current.state !== 'pending') wake(current);
      }
    }, options.pollMs ?? 1000).unref();
  };

  const expireIfDue = (request: HostRequest): HostRequest => {
    if (request.state !== 'pending' || request.expiresAt > now()) return request;
    const expired = backend.settle(request.id, 'expired', now());
    if (expired !== undefined) {
      settled(expired);
      return expired;
    }
    return backend.get(request.id) ?? request;
  };

  const arm = (request: HostRequest) => {
    if (closed) return;
    const delay = request.expiresAt - now();
    if (delay <= 0) {
      expireIfDue(request);
      return;
    }
    const timer = setTimeout(
      () => {
        timers.delete(request.id);
        const current = backend.get(request.id);
        if (current === undefined) return;
        if (current.state !== 'pending') return wake(current); // settled by another process
        if (current.expiresAt > now())
          arm(current); // fired early, or a long expiry re-arming
        else expireIfDue(current);
      },
      Math.min(delay, MAX_TIMER_MS),
    ).unref();
    timers.set(request.id, timer);
  };

  const get = (id: string): HostRequest | undefined => {
    const request = backend.get(id);
    return request === undefined ? undefined : expireIfDue(request);
  };

  for (const request of backend.listPending()) arm(request);

  return {
    pending: () => timers.size,
    create(input) {
      if (closed) throw new SandboxError('SHUTTING_DOWN', 'the request store is closed');
      if (!Number.isFinite(input.expiresAt)) {
        throw new SandboxError('BAD_REQUEST', 'a request needs a finite expiresAt (epoch ms)');
      }
      const request: HostRequest = {
        id: `req_${nanoid()}`,
        sessionId: input.sessionId,
        kind: input.kind,
        callId: input.callId,
        state: 'pending',
        payload: input.payload,
        createdAt: now(),
        expiresAt: input.expiresAt,
      };
      backend.insert(request);
      emit(request, 'request.created', {
        kind: request.kind,
        payload: request.payload,
        expiresAt: request.expiresAt,
      });
      arm(request);
      return backend.get(request.id) ?? request;
    },

    get,

    list(sessionId, state) {
      // 'pending' and 'expired' depend on the clock, so those lists are checked here, not by the backend.
      const final = state === 'answered' || state === 'cancelled';
      const all = backend.list(sessionId, final ? state : undefined).map(expireIfDue);
      return state === undefined ? all : all.filter((r) => r.state === state);
    },

    answer(id, answer) {
      const request = backend.settle(id, 'answered', now(), answer);
      if (request !== undefined) {
        settled(request);
        return true;
      }
      const current = backend.get(id);
      if (current !== undefined) expireIfDue(current);
      return false;
    },

    cancel(id) {
      const request = backend.settle(id, 'cancelled', now());
      if (request === undefined) return false;
      settled(request);
      return true;
    },

    wait(id, signal) {
      return new Promise<HostRequest>((resolve, reject) => {
        if (signal?.aborted) return reject(abortError(id, signal));
        const request = get(id);
        if (request === undefined) {
          return reject(new SandboxError('NOT_FOUND', `no request ${id}`, { data: { requestId: id } }));
        }
        if (request.state !== 'pending') return resolve(request);
        if (closed) return reject(new SandboxError('SHUTTING_DOWN', 'the request store is closed'));
        const set = waiters.get(id) ?? new Set();
        waiters.set(id, set);
        const onAbort = () => {
          set.delete(waiter);
          if (set.size === 0 && waiters.get(id) === set) waiters.delete(id);
          if (waiters.size === 0) stopPolling();
          reject(abortError(id, signal!));
        };
        const waiter = {
          resolve: (r: HostRequest) => {
            signal?.removeEventListener('abort', onAbort);
            resolve(r);
          },
          reject: (e: unknown) => {
            signal?.removeEventListener('abort', onAbort);
            reject(e);
          },
        };
        set.add(waiter);
        signal?.addEventListener('abort', onAbort, { once: true });
        startPolling();
      });
    },

    close() {
      closed = true;
      stopPolling();
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
      const error = new SandboxError('SHUTTING_DOWN', 'the request store closed while waiting');
      for (const set of waiters.values()) for (const waiter of set) waiter.reject(error);
      waiters.clear();
    },
  };
};

const abortError = (id: string, signal: AbortSignal) =>
  new SandboxError('ABORTED', `stopped waiting for request ${id}`, {
    cause: signal.reason,
    data: { requestId: id },
  });
