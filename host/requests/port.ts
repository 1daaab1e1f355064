// The port of host requests: durable, client-answered questions (approvals, remote tool calls,
// subagent runs …) as the store keeps them. host/store implements it (libsql, and an in-memory
// double); this room owns it, because what a request means (its kinds, payloads and answers) is
// decided here, not by storage. Types only: the store imports this file and nothing else of the room.
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
  create(input: NewHostRequest): HostRequest;
  get(id: string): HostRequest | undefined;
  list(sessionId: string, state?: HostRequestState): HostRequest[];
  /** First writer wins: false when the request is not pending any more. */
  answer(id: string, answer: JsonValue): boolean;
  cancel(id: string): boolean;
  /** Resolves with the settled request: answered, expired (at expiresAt) or cancelled. Rejects on abort. */
  wait(id: string, signal?: AbortSignal): Promise<HostRequest>;
}
