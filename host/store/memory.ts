// In-memory EventLog and RequestStore: the same shared cores as the libsql store over Maps, so
// they behave the same (batched writes, seq rules, first-writer-wins, expiry, waiters). Unit-test
// doubles for other modules; nothing here survives the process. Stored values are kept as JSON
// strings or copies so callers cannot change what was stored.
import type { HostRequest } from '../requests/port.ts';
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

/** `tenantOf` maps sessions to tenants (default: every session counts against tenant ''). */
export const createMemoryEventBackend = (
  tenantOf: (sessionId: string) => string = () => '',
): EventBackend => {
  const sessions = new Map<string, EventRow[]>();
  const blobs = new Map<string, string>();
  const usage = new Map<string, number>();
  const key = (tenantId: string, sha256: string) => `${tenantId}\0${sha256}`;
  return {
    lastSeq: (sessionId) => sessions.get(sessionId)?.at(-1)?.seq ?? 0,
    tenantOf,
    usage: (tenantId) => usage.get(tenantId) ?? 0,
    usageAll: () => [...usage].map(([tenantId, bytes]) => ({ tenantId, bytes })),
    readBlob: (tenantId, sha256) => blobs.get(key(tenantId, sha256)),
    hasBlob: (tenantId, sha256) => blobs.has(key(tenantId, sha256)),
    write(rows) {
      for (const row of rows) {
        const list = sessions.get(row.sessionId) ?? [];
        sessions.set(row.sessionId, list);
        // Only what a database would keep: not the queued row with its payloads and whole data.
        const { sessionId, seq, type, surface, callId, parentCallId, data, refs, at } = row;
        list.push({ sessionId, seq, type, surface, callId, parentCallId, data, refs, at });
        for (const blob of row.blobs) blobs.set(key(row.tenantId, blob.sha256), blob.json);
        usage.set(row.tenantId, (usage.get(row.tenantId) ?? 0) + row.bytes);
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
