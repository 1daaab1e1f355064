// The CallBatchStore port: call batches by idempotency key (POST /v1/agents/:id/calls with an
// Idempotency-Key), as every backend keeps them (libsql and the in-memory double:
// call-batches.ts, PostgreSQL: pg/call-batches.ts, the row both SQL backends share:
// call-batches-rows.ts). Types only; host/api/idempotency.ts decides what a row means to a request.
// Invariants every backend keeps: a claim is atomic, first writer wins (two replicas racing on one
// key never both get `claimed`); a row past its time to live reads as absent and a claim takes
// it over; a batch is settled once (the first settle of a running row wins, later ones are refused).

/** Where a key is scoped: one agent of one tenant. */
export interface CallBatchKey {
  tenantId: string;
  agentId: string;
  key: string;
}

/** What a request claims a key with. */
export interface CallBatchClaim extends CallBatchKey {
  /**
   * The session's last seq before the batch (EventLog.lastSeq): its events come after it, and the
   * log reader starts there when the batch's process died.
   */
  afterSeq: number;
  /** Hash of the canonical request body: the same key with another body is a different request. */
  bodyHash: string;
  /** The boot id of the process that runs the batch. */
  bootId: string;
}

/** The answer a client got for a batch: its HTTP status and its JSON body, as text. */
export interface CallBatchOutcome {
  status: number;
  body: string;
}

/** A claimed key as stored. */
export type CallBatchRecord = {
  bodyHash: string;
  /** The boot id of the process that claimed it. */
  startedBy: string;
  /** The session's last seq when it was claimed. */
  afterSeq: number;
  createdAt: number;
} & (
  | /** Claimed; its batch has not settled (it runs, or its process died under it). */ { state: 'running' }
  | /** Settled: what the client got. */ { state: 'done'; outcome: CallBatchOutcome }
);

export type ClaimResult =
  | /** This request holds the key now: run the batch. */ { kind: 'claimed'; afterSeq: number }
  | /** Someone holds it already (a live row): the row as it stands. */ {
      kind: 'held';
      batch: CallBatchRecord;
    };

/** How long a key is kept: a claim of a key older than this starts afresh. */
export const CALL_BATCH_TTL_MS = 24 * 60 * 60 * 1000;

export interface CallBatchStore {
  /** Claims the key, or answers the live row that holds it. Expired rows are pruned here, bounded. */
  claim(input: CallBatchClaim): Promise<ClaimResult>;
  /** The live row of a key, or undefined. */
  get(key: CallBatchKey): Promise<CallBatchRecord | undefined>;
  /**
   * Settles a running batch claimed by `startedBy` with what its client got. False when the row
   * is no longer that (settled by someone else, released, expired, taken over): nothing changed.
   */
  settle(key: CallBatchKey, startedBy: string, outcome: CallBatchOutcome): Promise<boolean>;
  /** Drops a running claim of `startedBy` (its batch did not run: a retry may run it). */
  release(key: CallBatchKey, startedBy: string): Promise<void>;
}
