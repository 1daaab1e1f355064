// Ports of the durable store. host/tools, host/api and host/agents depend on these interfaces;
// host/store/libsql implements them (host/store/memory is the in-process double for unit tests).
// Invariants: every session has a gap-free, strictly increasing per-session `seq` starting at 1;
// an appended event is never changed; answering a request is first-writer-wins.

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

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
}

export interface EventQuery {
  /** Only events with seq > afterSeq. Default 0. */
  afterSeq?: number;
  /** Default 500, at most 5000. */
  limit?: number;
}

export interface EventLog {
  /**
   * Appends in order and returns the assigned events. The write may be batched with other appends
   * made in the same tick; `flush()` resolves when everything appended so far is durable.
   */
  append(events: SessionEventInput[]): SessionEvent[];
  flush(): Promise<void>;
  list(sessionId: string, query?: EventQuery): SessionEvent[];
  /** Called for every event appended to the session after subscription. Returns an unsubscribe. */
  subscribe(sessionId: string, listener: (event: SessionEvent) => void): () => void;
}

/** Things only the client can answer: approvals (`ask`), remote tool calls, subagent runs. */
export type HostRequestKind = 'approval' | 'remote_tool' | 'subagent' | 'user_question';

export type HostRequestState = 'pending' | 'answered' | 'expired' | 'cancelled';

export interface HostRequest {
  id: string;
  sessionId: string;
  kind: HostRequestKind;
  callId: string;
  state: HostRequestState;
  /** What the client needs in order to answer (tool name, arguments, reason …). */
  payload: JsonValue;
  /** The client's answer once answered. */
  answer?: JsonValue;
  createdAt: number;
  expiresAt: number;
}

export interface RequestStore {
  create(input: {
    sessionId: string;
    kind: HostRequestKind;
    callId: string;
    payload: JsonValue;
    expiresAt: number;
  }): HostRequest;
  get(id: string): HostRequest | undefined;
  list(sessionId: string, state?: HostRequestState): HostRequest[];
  /** First writer wins: false when the request is not pending any more. */
  answer(id: string, answer: JsonValue): boolean;
  cancel(id: string): boolean;
  /** Resolves with the settled request: answered, expired (at expiresAt) or cancelled. Rejects on abort. */
  wait(id: string, signal?: AbortSignal): Promise<HostRequest>;
}
