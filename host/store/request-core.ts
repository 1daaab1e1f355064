// The RequestStore behaviour shared by every backend: nanoid ids, first-writer-wins settling,
// expiry timers, in-process waiters and request.* events. Invariants: a request leaves `pending`
// exactly once (the backend's conditional update decides who wins); a pending request past its
// expiresAt is never answered and reads as expired; at start, overdue requests are expired and the
// rest get timers, so nothing pending is lost across a restart (armed asynchronously: a read
// before that expires what is due all the same).
// Every method that touches the backend is asynchronous; each logs its event once its own backend
// call has settled, so the log follows the order in which the store settled them.
// This module wires the parts and holds create, draft/adopt, list, answer and cancel:
// request-state.ts holds what the parts share (the backend, timers, waiters, poller), request.*
// events and wake-up; request-expiry.ts settles, expires and arms timers; request-waiting.ts holds
// waiters, what wakes them from other processes (the wake-up bus, the backstop poller) and close.
import { nanoid } from 'nanoid';
import { SandboxError } from '../errors.ts';
import type { HostRequest, NewHostRequest, RequestStore } from '../requests/port.ts';
import { arm, expireIfDue, getRequest, settled } from './request-expiry.ts';
import {
  emit,
  type RequestBackend,
  type RequestCoreState,
  type RequestStoreOptions,
  report,
} from './request-state.ts';
import { closeRequests, listenForWakeUps, waitFor } from './request-waiting.ts';

export type { RequestBackend, RequestStoreOptions, SettledState } from './request-state.ts';

export interface ClosableRequestStore extends RequestStore {
  /** Clears expiry timers and rejects waiters with SHUTTING_DOWN. Stored state is untouched. */
  close(): void;
  /** Pending requests this process holds expiry timers for (all of its store's, read at start). */
  pending(): number;
}

export const createRequestStore = (
  backend: RequestBackend,
  options: RequestStoreOptions = {},
): ClosableRequestStore => {
  const state: RequestCoreState = {
    backend,
    options,
    now: options.now ?? Date.now,
    timers: new Map(),
    waiters: new Map(),
    closed: false,
    poller: undefined,
  };
  const { now } = state;
  const expire = (request: HostRequest) => expireIfDue(state, request);
  const unlisten = listenForWakeUps(state);

  // Arming what is pending is not awaited by anyone: a read meanwhile still expires what is due.
  report(
    state,
    backend.listPending().then((pending) => {
      for (const request of pending) arm(state, request);
    }),
  );

  /** The request's log line and expiry timer, once it is stored (by create or another store). */
  const track = async (request: HostRequest): Promise<HostRequest> => {
    const logged = emit(state, request, 'request.created', {
      kind: request.kind,
      payload: request.payload,
      expiresAt: request.expiresAt,
    });
    arm(state, request);
    // A refused request.created rejects create(), as before the port was asynchronous; the stored
    // request still expires on its timer.
    await logged;
    return (await backend.get(request.id)) ?? request;
  };

  const draft = (input: NewHostRequest): HostRequest => {
    if (state.closed) throw new SandboxError('SHUTTING_DOWN', 'the request store is closed');
    if (!Number.isFinite(input.expiresAt)) {
      throw new SandboxError('BAD_REQUEST', 'a request needs a finite expiresAt (epoch ms)');
    }
    return {
      id: `req_${nanoid()}`,
      sessionId: input.sessionId,
      kind: input.kind,
      callId: input.callId,
      state: 'pending',
      payload: input.payload,
      createdAt: now(),
      expiresAt: input.expiresAt,
    };
  };

  return {
    pending: () => state.timers.size,
    draft,
    async create(input) {
      const request = draft(input);
      await backend.insert(request);
      return track(request);
    },
    adopt: (request) => track(request),

    get: (id) => getRequest(state, id),

    async list(sessionId, wanted) {
      // 'pending' and 'expired' depend on the clock, so those lists are checked here, not by the backend.
      const final = wanted === 'answered' || wanted === 'cancelled';
      const stored = await backend.list(sessionId, final ? wanted : undefined);
      const all: HostRequest[] = [];
      for (const request of stored) all.push(await expire(request)); // in order, one settle at a time
      return wanted === undefined ? all : all.filter((r) => r.state === wanted);
    },

    async answer(id, answer) {
      const request = await backend.settle(id, 'answered', now(), answer);
      if (request !== undefined) {
        await settled(state, request);
        return true;
      }
      const current = await backend.get(id);
      if (current !== undefined) await expireIfDue(state, current);
      return false;
    },

    async cancel(id) {
      const request = await backend.settle(id, 'cancelled', now());
      if (request === undefined) return false;
      await settled(state, request);
      return true;
    },

    wait: (id, signal) => waitFor(state, id, signal),

    close() {
      unlisten();
      closeRequests(state);
    },
  };
};
