// The port of host requests: durable, client-answered questions (approvals, remote tool calls,
// subagent runs …) as the store keeps them. host/store implements it (libsql, and an in-memory
// double); this room owns it, because what a request means (its kinds, payloads and answers) is
// decided here, not by storage. Types only: the store imports this file and nothing else of the room.
// Every method that reads or writes the store is asynchronous (a network database may stand
// behind it); `draft` is a pure helper and stays synchronous.
// Invariants: a request leaves `pending` exactly once; answering is first-writer-wins; a pending
// request past its expiresAt is never answered and reads as expired.
import type { JsonValue } from '../json.ts';

export type HostRequestState = 'pending' | 'answered' | 'expired' | 'cancelled';

export interface HostRequest {
  id: string;
  sessionId: string;
  /** The name of its kind (host/requests/kinds); the store keeps it as given. */
  kind: string;
  callId: string;
  state: HostRequestState;
  /** What the client needs in order to answer (tool name, arguments, reason …). */
  payload: JsonValue;
  /** The client's answer once answered. */
  answer?: JsonValue;
  createdAt: number;
  expiresAt: number;
}

/** What a new request is made of; the store adds its id, state and createdAt. */
export interface NewHostRequest {
  sessionId: string;
  kind: string;
  callId: string;
  payload: JsonValue;
  /** Epoch ms; must be finite. */
  expiresAt: number;
}

export interface RequestStore {
  create(input: NewHostRequest): Promise<HostRequest>;
  get(id: string): Promise<HostRequest | undefined>;
  list(sessionId: string, state?: HostRequestState): Promise<HostRequest[]>;
  /** First writer wins: false when the request is not pending any more. */
  answer(id: string, answer: JsonValue): Promise<boolean>;
  cancel(id: string): Promise<boolean>;
  /**
   * The pending request `create` would store for `input`, not stored: for a request another
   * store's transaction writes together with its own change (a schedule's fire writes its
   * reminder so). Hand it to `adopt` once that transaction committed. BAD_REQUEST as create.
   */
  draft(input: NewHostRequest): HostRequest;
  /**
   * Takes over a drafted request another store's transaction wrote: logs request.created and
   * arms its expiry, as create does for its own. Resolves with the request as stored.
   */
  adopt(request: HostRequest): Promise<HostRequest>;
  /** Resolves with the settled request: answered, expired (at expiresAt) or cancelled. Rejects on abort. */
  wait(id: string, signal?: AbortSignal): Promise<HostRequest>;
}
