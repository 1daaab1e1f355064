// In-memory EventLog and RequestStore: the same shared cores as the libsql store over Maps, so
// they behave the same (batched writes, seq rules, first-writer-wins, expiry, waiters). Unit-test
// doubles for other modules; nothing here survives the process. Stored values are kept as JSON
// strings or copies so callers cannot change what was stored.
import {
  type ClosableEventLog,
  createEventLog,
  type EventBackend,
  type EventLogOptions,
  type EventRow,
} from './event-log-core.ts';
import {
  type ClosableRequestStore,
  createRequestStore,
  type RequestBackend,
  type RequestStoreOptions,
} from './request-core.ts';
import type { HostRequest } from './types.ts';

export const createMemoryEventBackend = (): EventBackend => {
  const sessions = new Map<string, EventRow[]>();
  return {
    lastSeq: (sessionId) => sessions.get(sessionId)?.at(-1)?.seq ?? 0,
    write(rows) {
      for (const row of rows) {
        const list = sessions.get(row.sessionId) ?? [];
        sessions.set(row.sessionId, list);
        list.push(row);
      }
    },
    read(sessionId, afterSeq, limit) {
      const list = sessions.get(sessionId) ?? [];
      // seq starts at 1 and has no gaps, so seq n sits at index n - 1.
      return list.slice(afterSeq, afterSeq + limit);
    },
  };
};

const copy = (request: HostRequest): HostRequest => structuredClone(request);

export const createMemoryRequestBackend = (): RequestBackend => {
  const requests = new Map<string, HostRequest>();
  return {
    insert(request) {
      requests.set(request.id, copy(request));
    },
    get: (id) => {
      const request = requests.get(id);
      return request === undefined ? undefined : copy(request);
    },
    list: (sessionId, state) =>
      [...requests.values()]
        .filter((r) => r.sessionId === sessionId && (state === undefined || r.state === state))
        .map(copy),
    settle(id, state, now, answer) {
      const request = requests.get(id);
      if (request === undefined || request.state !== 'pending') return undefined;
      if (state === 'answered' && request.expiresAt <= now) return undefined;
      request.state = state;
      if (state === 'answered') request.answer = structuredClone(answer ?? null);
      return copy(request);
    },
    listPending: () =>
      [...requests.values()]
        .filter((r) => r.state === 'pending')
        .sort((a, b) => a.expiresAt - b.expiresAt)
        .map(copy),
  };
};

export const createMemoryEventLog = (options: EventLogOptions = {}): ClosableEventLog =>
  createEventLog(createMemoryEventBackend(), options);

export const createMemoryRequestStore = (options: RequestStoreOptions = {}): ClosableRequestStore =>
  createRequestStore(createMemoryRequestBackend(), options);
