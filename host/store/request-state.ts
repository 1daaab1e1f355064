// What every part of the shared RequestStore core (request-core.ts) holds in common: the backend
// and options, the expiry timers, the in-process waiters and the poller that re-reads waited
// requests; plus request.* events (emit), waking a request's waiters (wake) and reporting what
// failed where nobody awaits it (report: a timer, the poller, arming at start).
// Invariants: `timers` holds one timer per pending request this process watches and none for a
// settled one (wake clears it); `waiters` holds a set only while someone waits on that request;
// the poller runs only while `waiters` is not empty (wake and abort stop it when the last leaves).
import type { JsonValue } from '../json.ts';
import type { HostRequest, HostRequestState } from '../requests/port.ts';
import type { EventLog } from './types.ts';
import type { WakeBus } from './wake-port.ts';

export type SettledState = Exclude<HostRequestState, 'pending'>;

/**
 * Persistence for requests. Every method is asynchronous so a network database can back it; the
 * libsql backend answers from its synchronous statements.
 */
export interface RequestBackend {
  insert(request: HostRequest): Promise<void>;
  get(id: string): Promise<HostRequest | undefined>;
  list(sessionId: string, state?: HostRequestState): Promise<HostRequest[]>;
  /**
   * Moves a pending request to `state` if it is still pending (and, for `answered`, not past
   * `now`), returning the settled request; undefined when someone else got there first.
   */
  settle(id: string, state: SettledState, now: number, answer?: JsonValue): Promise<HostRequest | undefined>;
  /** Every pending request, soonest expiry first (read at start to arm expiry timers). */
  listPending(): Promise<HostRequest[]>;
}

export interface RequestStoreOptions {
  /** Where request.created / answered / expired / cancelled events go. Default: nowhere. */
  events?: EventLog;
  /** Clock. Default Date.now. */
  now?: () => number;
  /**
   * Where settles are announced to other processes, and heard from them (`request` wake-ups wake
   * this process's waiters at once). Default: none (the poll alone sees other processes' settles).
   */
  wake?: WakeBus;
  /**
   * While someone waits and no wake-up bus listens to other processes, how often to re-read waited
   * requests, so an answer written by another process sharing the database still wakes them.
   * Default 1000 ms.
   */
  pollMs?: number;
  /**
   * The same re-read while the bus listens (a backstop for a wake-up lost between a write and its
   * NOTIFY). Default 5000 ms.
   */
  backstopPollMs?: number;
  /**
   * Told about store failures nobody awaits (an expiry timer, the poller, arming at start); the
   * store carries on and the next read retries. Default: nowhere.
   */
  onError?: (error: unknown) => void;
}

export interface RequestWaiter {
  resolve: (r: HostRequest) => void;
  reject: (e: unknown) => void;
}

export interface RequestCoreState {
  readonly backend: RequestBackend;
  readonly options: RequestStoreOptions;
  readonly now: () => number;
  readonly timers: Map<string, NodeJS.Timeout>;
  readonly waiters: Map<string, Set<RequestWaiter>>;
  closed: boolean;
  poller: NodeJS.Timeout | undefined;
}

/**
 * Logs a request's event; the append, for a caller that awaits it. The synchronous callers do not:
 * its rejection (a refused request.created) is caught here so it is never unhandled.
 */
export function emit(
  state: RequestCoreState,
  request: HostRequest,
  type: string,
  data: { [key: string]: JsonValue },
): Promise<unknown> | undefined {
  const appended = state.options.events?.append([
    {
      sessionId: request.sessionId,
      type,
      surface: 'log-only',
      callId: request.callId,
      data: { requestId: request.id, ...data },
    },
  ]);
  appended?.catch(() => undefined);
  return appended;
}

/** Resolves the waiters of a request that is no longer pending (settled here or elsewhere). */
export function wake(state: RequestCoreState, request: HostRequest): void {
  const { timers, waiters } = state;
  clearTimeout(timers.get(request.id));
  timers.delete(request.id);
  const set = waiters.get(request.id);
  waiters.delete(request.id);
  for (const waiter of set ?? []) waiter.resolve(request);
  if (waiters.size === 0) stopPolling(state);
}

export function stopPolling(state: RequestCoreState): void {
  clearInterval(state.poller);
  state.poller = undefined;
}

/** A failure of work nobody awaits (timers, the poller): reported, never an unhandled rejection. */
export function report(state: RequestCoreState, work: Promise<unknown>): void {
  work.catch((error: unknown) => state.options.onError?.(error));
}
