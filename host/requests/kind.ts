// What a kind of host request is: its name, the payload the client is shown, the answer shapes the
// client may send, and how a settled request becomes the waiting caller's result. One file per kind
// under kinds/, listed in registry.ts; adding a kind changes nothing else (the API's answer union,
// its validation and the store follow from the list).
import * as v from 'valibot';
import type { JsonValue } from '../json.ts';

/** How a request ended, as its kind reads it. `payload` is the one the request was made with. */
export type Settlement<Payload, Answer> =
  /** The client answered with one of the kind's answer shapes. */
  | { state: 'answered'; payload: Payload; ttlMs: number; answer: Answer }
  /** The stored answer fits none of the kind's shapes (it was written around the API). */
  | { state: 'malformed'; payload: Payload; ttlMs: number; answer: JsonValue | undefined }
  /** Nobody answered within `ttlMs`. */
  | { state: 'expired'; payload: Payload; ttlMs: number }
  /** Someone else cancelled it (the agent was deleted …); an aborted caller never gets here. */
  | { state: 'cancelled'; payload: Payload; ttlMs: number };

export interface RequestKind<Payload = unknown, Answer = unknown, Outcome = unknown> {
  /** Stored as the request's `kind`, what clients switch on; never renamed once shipped. */
  readonly name: string;
  /** What the client is shown in order to answer; checked before a request is stored. */
  readonly payload: v.GenericSchema<Payload>;
  /** The answer shapes the client may send: each is one member of the API's answer union. */
  readonly answers: readonly v.GenericSchema[];
  /** Accepts exactly `answers`. */
  readonly answer: v.GenericSchema<unknown, Answer>;
  /** The BAD_REQUEST message for an answer that fits another kind: says what to send instead. */
  readonly wrongAnswer: string;
  /** The waiting caller's result; throws a SandboxError to fail the caller. */
  settle(settlement: Settlement<Payload, Answer>): Outcome;
}

export const defineRequestKind = <
  Payload,
  const Answers extends readonly [v.GenericSchema, ...v.GenericSchema[]],
  Outcome,
>(definition: {
  name: string;
  payload: v.GenericSchema<Payload>;
  answers: Answers;
  wrongAnswer: string;
  settle(settlement: Settlement<Payload, v.InferOutput<Answers[number]>>): Outcome;
}): RequestKind<Payload, v.InferOutput<Answers[number]>, Outcome> => ({
  ...definition,
  answer: v.union(definition.answers) as v.GenericSchema<unknown, v.InferOutput<Answers[number]>>,
});

/**
 * A payload field that is JSON by construction (call arguments parsed from JSON). Typed, not
 * walked: the store writes it as JSON either way, and a walk would cost as much as the value.
 */
export const jsonValue = v.custom<JsonValue>(() => true);
