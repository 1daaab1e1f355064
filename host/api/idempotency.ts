// Idempotency keys of POST /v1/agents/:id/calls (docs/api.md, "Idempotency keys"): a request with
// an `Idempotency-Key` header claims the key for its agent before its batch runs, and stores what
// its client got when the batch settles; a retry with the same key is answered from that and never
// runs the calls again. This module owns the decision; the rows are host/store's CallBatchStore.
// Decisions on a key, in order:
// - held by a batch running in THIS process (same key, same body): wait for it, answer the same;
// - the store's claim wins: run the batch, then store its answer (an error too, except the ones a
//   client is told to retry, 429/502/503, and AGENT_PAUSED: those free the key, since nothing was run);
// - the stored row has another body hash: IDEMPOTENCY_KEY_REUSED (422);
// - the stored row is done: its answer, at once, as a replay;
// - the stored row is running under another boot id whose process still runs (holderAlive):
//   IDEMPOTENCY_KEY_IN_PROGRESS (409, Retry-After: 1), the client comes back for the answer;
// - the stored row is running under another boot id (or an earlier failure of this one's store
//   write): its process is gone (a crash, a fail-over; with replicas a keyed request reaches the
//   agent's owner, so another boot id's running claim is a former owner's): the batch's results
//   are read from the session log after the seq the claim kept (EventLog.lastSeq at the claim;
//   idempotency-log.ts), stored as its answer (first settle wins), and replayed.
// An answer larger than STORED_ANSWER_MAX is not stored: its row keeps LOG_ANSWER, and a replay
// reads the results from the session log like the recovery above (within the tenant's log budget,
// its large values held once), instead of the store keeping every result in full once more. Nor
// is one past the tenant's TENANT_STORED_MAX of answers stored by this process in the keys' 24
// hours: smaller answers repeat outputs the log holds once, too.
// Invariants: without the header nothing here runs (no store write on the hot path); a batch of
// one key runs at most once across processes (the claim is first-writer-wins in the store); one
// process asks the store once per key while a batch of it runs here (the in-flight map is filled
// before the claim is awaited).
import { createHash, randomUUID } from 'node:crypto';
import { httpStatusOf, isSandboxError, SandboxError } from '../errors.ts';
import {
  CALL_BATCH_TTL_MS,
  type CallBatchKey,
  type CallBatchOutcome,
  type CallBatchRecord,
  type CallBatchStore,
} from '../store/call-batches-port.ts';
import type { EventLog } from '../store/types.ts';
import type { ToolCall, ToolResult } from '../tools/types.ts';
import { errorBodyOf } from './errors.ts';
import { resultsFromLog } from './idempotency-log.ts';

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
/** Set on an answer that was not run for this request (stored, or shared with a running one). */
export const REPLAYED_HEADER = 'Idempotent-Replayed';
export const MAX_KEY_LENGTH = 255;

/**
 * Bytes of an answer stored for its key. Why a bound: an answer repeats every result in full (16
 * calls printing the same 1 MiB file answer 16 MiB), outside the log's budget and its payload
 * dedup, so keyed batches could fill the store's disk for 24 hours at the log's cost of ~1 MiB.
 */
export const STORED_ANSWER_MAX = 1024 * 1024;
/**
 * Bytes of answers one tenant has stored by this process in a window of CALL_BATCH_TTL_MS (so at
 * most twice that live at once); past it its answers are replayed from the log. Why: 30 calls
 * answering the same 16 KiB cost the log ~21 KB (a value is held once per tenant) and the store
 * ~1 MB, so keyed batches under STORED_ANSWER_MAX still put ~47x their log cost on the disk.
 */
export const TENANT_STORED_MAX = 32 * 1024 * 1024;
/** The stored body of an answer too large to store (not JSON, so no stored answer reads like it). */
const LOG_ANSWER = '@log';

/** Statuses a client retries on (client/retry.ts): such an answer frees its key instead of being stored. */
const RETRYABLE = new Set([429, 502, 503]);

/** The key of a header value; undefined without one. IDEMPOTENCY_KEY_INVALID when malformed. */
export function keyOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (header.length < 1 || header.length > MAX_KEY_LENGTH || !/^[\x20-\x7e]+$/.test(header))
    throw new SandboxError(
      'IDEMPOTENCY_KEY_INVALID',
      `${IDEMPOTENCY_HEADER} must be 1 to ${MAX_KEY_LENGTH} printable ASCII characters; send a random one per batch (a UUID) and the same one on its retries.`,
    );
  return header;
}

/** JSON text with object keys sorted: two bodies that differ only in key order hash alike. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export const bodyHashOf = (body: unknown): string =>
  createHash('sha256').update(canonical(body)).digest('hex');

/** One keyed request: who it is for and what it asks. */
export interface KeyedBatch extends CallBatchKey {
  sessionId: string;
  bodyHash: string;
  calls: readonly ToolCall[];
}

export type Ticket =
  | /** This request runs the batch: report how it ended with exactly one of done/failed. */ {
      kind: 'run';
      /** Stores the results; resolves to the answer's JSON text (what to send). */
      done(results: ToolResult[]): Promise<string>;
      /** Stores the error's answer (or frees the key); the caller then answers the error as usual. */
      failed(error: unknown): Promise<void>;
    }
  | /** Answered without running: send this as it is, marked replayed. */ {
      kind: 'replay';
      outcome: CallBatchOutcome;
    };

export interface IdempotencyOptions {
  batches: CallBatchStore;
  events: EventLog;
  /** This process's boot id (who claims). Default: a fresh random one per instance. */
  bootId?: string;
  /**
   * Whether the process of another boot id still runs (with replicas: its heartbeat or lease).
   * While it does, a retry of a batch it claimed and has not settled answers
   * IDEMPOTENCY_KEY_IN_PROGRESS (409, Retry-After) instead of reading the log. Default: no other
   * process does (one service per database).
   */
  holderAlive?: (bootId: string) => Promise<boolean>;
}

export interface Idempotency {
  readonly bootId: string;
  begin(batch: KeyedBatch): Promise<Ticket>;
}

interface InFlight {
  bodyHash: string;
  outcome: Promise<CallBatchOutcome>;
}

const reused = (key: string) =>
  new SandboxError(
    'IDEMPOTENCY_KEY_REUSED',
    `${IDEMPOTENCY_HEADER} ${JSON.stringify(key)} was used for a different batch of this agent; use a new key for a new batch.`,
  );

const inProgress = (key: string) =>
  new SandboxError(
    'IDEMPOTENCY_KEY_IN_PROGRESS',
    `The batch of ${IDEMPOTENCY_HEADER} ${JSON.stringify(key)} still runs on another replica; retry after Retry-After for its answer.`,
    { data: { retryAfterS: 1 } },
  );

/**
 * What is stored for a tenant's answers: each itself, or LOG_ANSWER past STORED_ANSWER_MAX or
 * past the tenant's TENANT_STORED_MAX in the window.
 */
function storedAnswers(now: () => number = Date.now) {
  const held = new Map<string, { since: number; bytes: number }>();
  return (tenantId: string, answer: CallBatchOutcome): CallBatchOutcome => {
    const size = Buffer.byteLength(answer.body);
    const at = now();
    let mine = held.get(tenantId);
    if (mine === undefined || mine.since <= at - CALL_BATCH_TTL_MS) {
      mine = { since: at, bytes: 0 };
      held.set(tenantId, mine);
    }
    if (size > STORED_ANSWER_MAX || mine.bytes + size > TENANT_STORED_MAX)
      return { status: answer.status, body: LOG_ANSWER };
    mine.bytes += size;
    return answer;
  };
}

const outcomeOfError = (error: unknown): CallBatchOutcome => ({
  status: isSandboxError(error) ? httpStatusOf(error.code) : 500,
  body: JSON.stringify(errorBodyOf(error)),
});

export function createIdempotency(options: IdempotencyOptions): Idempotency {
  const { batches, events } = options;
  const bootId = options.bootId ?? randomUUID();
  const inFlight = new Map<string, InFlight>();
  const idOf = (k: CallBatchKey) => JSON.stringify([k.tenantId, k.agentId, k.key]);
  const storable = storedAnswers();

  /** The batch's answer as its session log tells it, from `afterSeq` on. */
  async function fromLog(batch: KeyedBatch, afterSeq: number): Promise<CallBatchOutcome> {
    const results = await resultsFromLog(events, batch.sessionId, afterSeq, batch.calls);
    return { status: 200, body: JSON.stringify({ results }) };
  }

  /** A settled row's answer: stored, or read from the log when it was too large to store. */
  const answerOf = (batch: KeyedBatch, held: CallBatchRecord & { state: 'done' }) =>
    held.outcome.body === LOG_ANSWER ? fromLog(batch, held.afterSeq) : Promise.resolve(held.outcome);

  /** The answer of a batch claimed by a process that is gone, from the log; stored first-wins. */
  async function recover(batch: KeyedBatch, startedBy: string, afterSeq: number): Promise<CallBatchOutcome> {
    const outcome = await fromLog(batch, afterSeq);
    if (await batches.settle(batch, startedBy, storable(batch.tenantId, outcome))) return outcome;
    const now = await batches.get(batch);
    return now?.state === 'done' ? answerOf(batch, now) : outcome;
  }

  async function begin(batch: KeyedBatch): Promise<Ticket> {
    const id = idOf(batch);
    const running = inFlight.get(id);
    if (running !== undefined) {
      if (running.bodyHash !== batch.bodyHash) throw reused(batch.key);
      return { kind: 'replay', outcome: await running.outcome };
    }
    let settle!: (outcome: CallBatchOutcome) => void;
    let refuse!: (error: unknown) => void;
    const outcome = new Promise<CallBatchOutcome>((resolve, reject) => {
      settle = resolve;
      refuse = reject;
    });
    outcome.catch(() => undefined); // nobody may be waiting
    inFlight.set(id, { bodyHash: batch.bodyHash, outcome });
    const finish = (answer: CallBatchOutcome | undefined, error?: unknown) => {
      inFlight.delete(id);
      if (answer === undefined) refuse(error);
      else settle(answer);
    };

    let claim: Awaited<ReturnType<CallBatchStore['claim']>>;
    try {
      // Where the batch's events will start: after every event appended so far, queued ones too
      // (an earlier batch's, with the same call ids: the client numbers calls c1, c2, …). A log
      // that cannot tell (a test double) gives 0: the reader then starts at the first event.
      const afterSeq = (await events.lastSeq?.(batch.sessionId)) ?? 0;
      claim = await batches.claim({ ...batch, afterSeq, bootId });
    } catch (error) {
      finish(undefined, error);
      throw error;
    }
    if (claim.kind === 'claimed')
      return {
        kind: 'run',
        async done(results) {
          const answer = { status: 200, body: JSON.stringify({ results }) };
          // A failed write leaves the row running under this boot id: a retry then reads the log.
          await batches.settle(batch, bootId, storable(batch.tenantId, answer)).catch(() => false);
          finish(answer);
          return answer.body;
        },
        async failed(error) {
          const answer = outcomeOfError(error);
          // A paused agent that refused the batch ran nothing of it either: after a resume the same key runs it.
          const unrun =
            RETRYABLE.has(answer.status) || (error as { code?: unknown })?.code === 'AGENT_PAUSED';
          if (unrun) await batches.release(batch, bootId).catch(() => undefined);
          else await batches.settle(batch, bootId, answer).catch(() => false);
          finish(answer);
        },
      };

    try {
      const held = claim.batch;
      if (held.bodyHash !== batch.bodyHash) throw reused(batch.key);
      if (
        held.state === 'running' &&
        held.startedBy !== bootId &&
        (await options.holderAlive?.(held.startedBy))
      )
        throw inProgress(batch.key);
      const answer =
        held.state === 'done'
          ? await answerOf(batch, held)
          : await recover(batch, held.startedBy, held.afterSeq);
      finish(answer);
      return { kind: 'replay', outcome: answer };
    } catch (error) {
      finish(undefined, error);
      throw error;
    }
  }

  return { bootId, begin };
}
