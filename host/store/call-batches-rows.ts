// The `call_batches` row (migration 17) as both SQL backends of the CallBatchStore read it: the
// row type and row → record. One module, so libsql (call-batches.ts) and PostgreSQL
// (pg/call-batches.ts) mean the same by every column; each keeps only its SQL. Imports no backend.
import type { CallBatchRecord } from './call-batches-port.ts';

export interface CallBatchRow {
  body_hash: string;
  state: string;
  status: number | null;
  body: string | null;
  after_seq: number;
  started_by: string;
  created_at: number;
}

export const CALL_BATCH_COLUMNS = 'body_hash, state, status, body, after_seq, started_by, created_at';

/** Expired rows removed per prune: a claim never pays for a long backlog at once. */
export const PRUNE_LIMIT = 100;
/** How often a store prunes (ms): at most once a minute, on a claim. */
export const PRUNE_EVERY_MS = 60_000;

export const toCallBatch = (row: CallBatchRow): CallBatchRecord => {
  const base = {
    bodyHash: row.body_hash,
    startedBy: row.started_by,
    afterSeq: Number(row.after_seq),
    createdAt: Number(row.created_at),
  };
  return row.state === 'done'
    ? { ...base, state: 'done', outcome: { status: Number(row.status), body: row.body ?? '' } }
    : { ...base, state: 'running' };
};
