// Call batches by idempotency key (migration 17) on libsql, and the in-memory double. What a row
// means to a request is host/api/idempotency.ts's business; this module keeps the rows.
// Invariants (call-batches-port.ts): the claim is ONE upsert (INSERT … ON CONFLICT DO UPDATE
// only over an expired row … RETURNING), so of two processes racing on one key exactly one gets
// a row back; settle and release are conditional on the row still running under its claimer; a
// row released between a lost claim and its read is claimed again. Expired rows are deleted at
// most once a minute, at most PRUNE_LIMIT at a time, on a claim. The port is asynchronous; libsql
// answers from synchronous prepared statements.
import type { CallBatchKey, CallBatchOutcome, CallBatchRecord, CallBatchStore } from './call-batches-port.ts';
import { CALL_BATCH_TTL_MS } from './call-batches-port.ts';
import {
  CALL_BATCH_COLUMNS,
  type CallBatchRow,
  PRUNE_EVERY_MS,
  PRUNE_LIMIT,
  toCallBatch,
} from './call-batches-rows.ts';
import { type Database, guarded } from './db.ts';

export type { CallBatchStore } from './call-batches-port.ts';

export const createCallBatchStore = (db: Database, now: () => number = Date.now): CallBatchStore => {
  const claim = db.prepare(
    `INSERT INTO call_batches (tenant_id, agent_id, key, body_hash, state, after_seq, started_by, created_at)
     VALUES (?, ?, ?, ?, 'running', ?, ?, ?)
     ON CONFLICT (tenant_id, agent_id, key) DO UPDATE SET
       body_hash = excluded.body_hash, state = 'running', status = NULL, body = NULL,
       after_seq = excluded.after_seq, started_by = excluded.started_by, created_at = excluded.created_at
     WHERE call_batches.created_at <= ?
     RETURNING after_seq`,
  );
  const select = db.prepare(
    `SELECT ${CALL_BATCH_COLUMNS} FROM call_batches
     WHERE tenant_id = ? AND agent_id = ? AND key = ? AND created_at > ?`,
  );
  const settle = db.prepare(
    `UPDATE call_batches SET state = 'done', status = ?, body = ?
     WHERE tenant_id = ? AND agent_id = ? AND key = ? AND state = 'running' AND started_by = ?`,
  );
  const release = db.prepare(
    `DELETE FROM call_batches
     WHERE tenant_id = ? AND agent_id = ? AND key = ? AND state = 'running' AND started_by = ?`,
  );
  const prune = db.prepare(
    `DELETE FROM call_batches WHERE (tenant_id, agent_id, key) IN
       (SELECT tenant_id, agent_id, key FROM call_batches WHERE created_at <= ? LIMIT ${PRUNE_LIMIT})`,
  );
  let prunedAt = Number.NEGATIVE_INFINITY;

  const get = (k: CallBatchKey, at: number): CallBatchRecord | undefined => {
    const row = select.all(k.tenantId, k.agentId, k.key, at - CALL_BATCH_TTL_MS)[0] as
      | CallBatchRow
      | undefined;
    return row === undefined ? undefined : toCallBatch(row);
  };

  return {
    claim: async (input) =>
      guarded('claim a call batch', () => {
        const at = now();
        const expired = at - CALL_BATCH_TTL_MS;
        if (at - prunedAt >= PRUNE_EVERY_MS) {
          prunedAt = at;
          prune.run(expired);
        }
        const { tenantId, agentId, key, bodyHash, afterSeq, bootId } = input;
        for (let attempt = 0; ; attempt++) {
          const won = claim.all(tenantId, agentId, key, bodyHash, afterSeq, bootId, at, expired)[0] as
            | { after_seq: number }
            | undefined;
          if (won !== undefined) return { kind: 'claimed', afterSeq: Number(won.after_seq) };
          const batch = get(input, at);
          if (batch !== undefined) return { kind: 'held', batch };
          // Released by its claimer (another process) between the two statements: claim it again.
          if (attempt === 2) throw new Error('the key was claimed and released three times in a row; retry');
        }
      }),
    get: async (k) => guarded('read a call batch', () => get(k, now())),
    settle: async (k, startedBy, outcome) =>
      guarded(
        'settle a call batch',
        () => settle.run(outcome.status, outcome.body, k.tenantId, k.agentId, k.key, startedBy).changes > 0,
      ),
    release: async (k, startedBy) =>
      guarded('release a call batch', () => {
        release.run(k.tenantId, k.agentId, k.key, startedBy);
      }),
  };
};

export interface MemoryCallBatchOptions {
  /** Default Date.now. */
  now?: () => number;
}

/** The in-memory double (unit tests): the same rules over a Map, copies in and out. */
export const createMemoryCallBatchStore = (options: MemoryCallBatchOptions = {}): CallBatchStore => {
  const now = options.now ?? Date.now;
  const rows = new Map<string, CallBatchRecord>();
  const idOf = (k: CallBatchKey) => JSON.stringify([k.tenantId, k.agentId, k.key]);
  const live = (k: CallBatchKey): CallBatchRecord | undefined => {
    const row = rows.get(idOf(k));
    if (row === undefined || row.createdAt <= now() - CALL_BATCH_TTL_MS) return undefined;
    return structuredClone(row);
  };
  return {
    async claim(input) {
      for (const [id, row] of rows) if (row.createdAt <= now() - CALL_BATCH_TTL_MS) rows.delete(id);
      const held = live(input);
      if (held !== undefined) return { kind: 'held', batch: held };
      const { afterSeq } = input;
      rows.set(idOf(input), {
        bodyHash: input.bodyHash,
        startedBy: input.bootId,
        afterSeq,
        createdAt: now(),
        state: 'running',
      });
      return { kind: 'claimed', afterSeq };
    },
    get: async (k) => live(k),
    async settle(k, startedBy, outcome: CallBatchOutcome) {
      const row = live(k);
      if (row?.state !== 'running' || row.startedBy !== startedBy) return false;
      rows.set(idOf(k), { ...row, state: 'done', outcome: { ...outcome } });
      return true;
    },
    async release(k, startedBy) {
      const row = live(k);
      if (row?.state === 'running' && row.startedBy === startedBy) rows.delete(idOf(k));
    },
  };
};
