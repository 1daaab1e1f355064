// The store's own ports: the durable session log (EventLog, with payload reads and usage per
// tenant) and its search (EventSearch). Every method that reads or writes the store answers with a
// Promise (issue 30: a network database is a backend too); subscribers stay in-process and sync. host/tools, host/api and host/agents depend on these interfaces; host/store implements
// them over libsql (memory.ts is the in-process double for unit tests). The store also implements
// ports other rooms own (RequestStore: host/requests/port.ts) and imports nothing above it.
// Invariants: every session has a gap-free, strictly increasing per-session `seq` starting at 1;
// an appended event is never changed.
import type { JsonValue } from '../json.ts';

/** Where an event shows in the model's history: as part of it, or only in the audit log. */
export type EventSurface = 'current' | 'log-only';

export interface SessionEventInput {
  sessionId: string;
  /** Dotted type, e.g. `tool.call`, `tool.result`, `request.created`, `request.answered`. */
  type: string;
  surface: EventSurface;
  /** The call this event belongs to (root or inner). */
  callId?: string;
  /** For inner calls of run_code / workflows / plugins: the call that contains them. */
  parentCallId?: string;
  data: JsonValue;
}

export interface SessionEvent extends SessionEventInput {
  seq: number;
  /** Epoch milliseconds when the event was appended. */
  at: number;
  /**
   * Only when read with `payloads: 'refs'`: the large values of `data` that were left as markers
   * (`{ "$ref": "sha256:…", "bytes": n }`), each fetchable with EventPayloads.payload().
   */
  payloads?: PayloadRef[];
}

/**
 * A value of an event's data stored apart from the event (once per tenant, by content hash). Only
 * the places listed here are markers; data that merely looks like a marker is data.
 */
export interface PayloadRef {
  /** Where the value sits in the event's `data` (RFC 6901 JSON Pointer). */
  pointer: string;
  /** Hex SHA-256 of the value's JSON text. */
  sha256: string;
  /** UTF-8 length of the value's JSON text. */
  bytes: number;
  /** The value was not kept (a result past its tenant's log budget); only its hash and size were. */
  dropped?: true;
}

export interface EventQuery {
  /** Only events with seq > afterSeq. Default 0. */
  afterSeq?: number;
  /** Default 500, at most 5000. */
  limit?: number;
  /**
   * A page ends before the event that would take it past this many bytes of event JSON; it always
   * holds at least one event. Default: no byte bound.
   */
  maxBytes?: number;
  /**
   * `inline` (default): large values are read back into `data`. `refs`: they stay markers, listed in
   * `payloads`, so an event costs at most about the store's inline threshold.
   */
  payloads?: 'inline' | 'refs';
  /**
   * Only what is durable: the rows still queued or being written are left out. What clients read
   * (the API's pages and streams, after a flush) is durable only, so a seq they saw is never handed
   * out again after a crash or a fail-over. Default false: an append is readable at once.
   */
  durable?: boolean;
}

export interface EventLog {
  /**
   * Appends in order and resolves to the assigned events. The write may be batched with other
   * appends made in the same tick; `flush()` resolves when everything appended so far is durable.
   * Appends keep call order per session even when not awaited one by one (append() called twice
   * in a row gives the first call's events the lower seqs), and an appended event is readable
   * (list) from the moment its append resolves.
   */
  append(events: SessionEventInput[]): Promise<SessionEvent[]>;
  flush(): Promise<void>;
  /**
   * Whether an event of `bytes` (default 1 KiB) of this session that settles nothing would be
   * admitted now: false once its tenant's budget has less room left (or the log is closed). What
   * must not happen unrecorded (an egress) asks first. Absent: every event is admitted.
   */
  admits?(sessionId: string, bytes?: number): Promise<boolean>;
  list(sessionId: string, query?: EventQuery): Promise<SessionEvent[]>;
  /**
   * Called for every event appended to the session after subscription (in-process, so synchronous).
   * Returns an unsubscribe.
   */
  subscribe(sessionId: string, listener: (event: SessionEvent) => void): () => void;
  /**
   * The session's last seq as this process assigned it, events still queued included (what its
   * next append follows); 0 for a session without events. Absent on logs that cannot tell.
   */
  lastSeq?(sessionId: string): Promise<number>;
  /**
   * Where the session's kept log starts: its first seq still stored, 1 until retention removed
   * older events (events before it are gone for good; pages say so). Absent on logs that keep all.
   */
  firstSeq?(sessionId: string): Promise<number>;
  /**
   * Replicas (a fenced log): resolves once the appended event is durable, and rejects
   * OWNER_FENCED when it was dropped because another replica runs its family now. A call runs only
   * after its `tool.call` is stored (tools/call-log.ts), so no call runs on a replica whose record
   * of it the database refused, and no call runs unrecorded when its owner stops. Absent on logs
   * without a fence: there an append is acknowledged once queued (one process, read-your-writes).
   */
  stored?(event: SessionEvent): Promise<void>;
}

/** Log bytes one tenant's sessions hold: event rows plus the payloads stored for them. */
export interface TenantLogUsage {
  tenantId: string;
  bytes: number;
  /** Log budget in bytes (the same for every tenant). */
  budget: number;
  /** Payloads not stored because the tenant was over budget (this process, since start). */
  dropped: number;
  /** Appends refused with STORE_BUDGET_EXCEEDED (this process, since start). */
  refused: number;
}

/** What the durable store adds to the EventLog port: payload reads and usage per tenant. */
export interface EventPayloads {
  /**
   * The JSON text of one listed payload of an event (with any payloads inside it read back).
   * NOT_FOUND when the event has no such payload or the payload was dropped.
   */
  payload(sessionId: string, seq: number, pointer: string): Promise<string>;
  /** Every tenant with log usage (stored and queued). */
  usage(): Promise<TenantLogUsage[]>;
  /**
   * One tenant's log usage as usage() would list it (0 bytes when it has none): one row read at
   * most, whatever the number of tenants (GET /v1/limits asks it on every call).
   */
  usageOf(tenantId: string): Promise<TenantLogUsage>;
}

/** A `tool.call` in the log with no `tool.result` after it (its process stopped while it ran). */
export interface UnfinishedCall {
  sessionId: string;
  /** The seq of its `tool.call` event. */
  seq: number;
  callId: string;
  /** The tool's name, as the call event has it. */
  name: string;
  surface: EventSurface;
  parentCallId: string | undefined;
  /** Whose code made the call (a plugin's), as the call event has it. */
  provenance?: JsonValue;
  /** When the call was logged (epoch ms). */
  at: number;
}

/** What the durable store adds for the repair after a crash (host/tools/interrupted.ts). */
export interface EventRepairs {
  /**
   * Every logged call without a result, of `sessionIds` only when given: by session, then seq.
   * Everything appended before is written first. Reads only the sessions whose stored calls
   * outnumber their results (a counter the writes keep), never the whole log. A call id may
   * repeat in one session: a result closes the earliest open call with its id.
   */
  unfinishedCalls(options?: { sessionIds?: readonly string[] }): Promise<UnfinishedCall[]>;
}

/** Whether a session's agent still exists (`live`) or only its log does (`persisted`: the agent was deleted). */
export type SessionAvailability = 'live' | 'persisted';

/** A full-text search of one tenant's session log (event-search.ts). Times are epoch ms, bounds inclusive. */
export interface EventSearchQuery {
  tenantId: string;
  /** Search box words: every one must occur (a word with punctuation is matched as a phrase). */
  query: string;
  /** Only these sessions; all of the tenant's when absent. */
  sessionIds?: readonly string[];
  seqFrom?: number;
  seqTo?: number;
  timeFrom?: number;
  timeTo?: number;
  types?: readonly string[];
  surfaces?: readonly string[];
  /** Only sessions created in this range. */
  createdFrom?: number;
  createdTo?: number;
  /** Only sessions of these availabilities; both when absent. */
  availability?: readonly SessionAvailability[];
  /** Most hits returned. */
  limit: number;
}

/** One event a search found. */
export interface EventHit {
  sessionId: string;
  seq: number;
  type: string;
  surface: EventSurface;
  at: number;
}

/** A session as the search tools show it: one per agent, its id the agent's id. */
export interface SessionInfo {
  id: string;
  createdAt: number;
  availability: SessionAvailability;
  /** The session of the agent that made this one's agent (a child or teammate); absent for a root. */
  parentId?: string;
  /** The highest seq of its log (0: nothing logged yet). */
  lastSeq: number;
}

/** Search over the durable log; never crosses tenants (every method takes the tenant). */
export interface EventSearch {
  /** Matching events, newest first (by when they were indexed), at most `limit`. */
  search(query: EventSearchQuery): Promise<EventHit[]>;
  /** The tenant's session `id` (its agent deleted or not); undefined for another tenant's or none. */
  session(tenantId: string, id: string): Promise<SessionInfo | undefined>;
  /** The ids of the sessions whose parent is one of `parentIds` (deleted agents' too), oldest first. */
  children(tenantId: string, parentIds: readonly string[]): Promise<string[]>;
  /** How many events of `type` the tenant's session `id` holds (from the index, no scan of the log). */
  count(tenantId: string, id: string, type: string): Promise<number>;
}
