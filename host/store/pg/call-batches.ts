// Call batches by idempotency key (migration 17) on PostgreSQL: the CallBatchStore of
// ../call-batches.ts over the same `call_batches` rows. Invariants as on libsql: the claim is ONE
// upsert that takes over only an expired row (INSERT … ON CONFLICT DO UPDATE … WHERE … RETURNING),
// so of two replicas racing on one key exactly one gets a row back (the loser's statement waits
// on the winner's row lock and then finds a live row); settle and release are conditional on the
// row still running under its claimer; a row released between a lost claim and its read is
// claimed again. Expired rows are deleted at most once a minute per
// process, at most PRUNE_LIMIT at a time, on a claim.
import type { CallBatchKey, CallBatchRecord, CallBatchStore } from '../call-batches-port.ts';
import { CALL_BATCH_TTL_MS } from '../call-batches-port.ts';
import {
  CALL_BATCH_COLUMNS,
  type CallBatchRow,
  PRUNE_EVERY_MS,
  PRUNE_LIMIT,
  toCallBatch,
} from '../call-batches-rows.ts';
import { type PgDatabase, pgGuarded } from './db.ts';

export const createPgCallBatchStore = (db: PgDatabase, now: () => number = Date.now): CallBatchStore => {
  let prunedAt = Number.NEGATIVE_INFINITY;

  const get = async (k: CallBatchKey, at: number): Promise<CallBatchRecord | undefined> => {
    const row = await db.one<CallBatchRow>(
      `SELECT ${CALL_BATCH_COLUMNS} FROM call_batches
       WHERE tenant_id = $1 AND agent_id = $2 AND key = $3 AND created_at > $4`,
      [k.tenantId, k.agentId, k.key, at - CALL_BATCH_TTL_MS],
    );
    return row === undefined ? undefined : toCallBatch(row);
  };

  return {
    claim: (input) =>
      pgGuarded('claim a call batch', async () => {
        const at = now();
        const expired = at - CALL_BATCH_TTL_MS;
        if (at - prunedAt >= PRUNE_EVERY_MS) {
          prunedAt = at;
          await db.query(
            `DELETE FROM call_batches WHERE (tenant_id, agent_id, key) IN
               (SELECT tenant_id, agent_id, key FROM call_batches WHERE created_at <= $1 LIMIT ${PRUNE_LIMIT})`,
            [expired],
          );
        }
        const { tenantId, agentId, key, bodyHash, afterSeq, bootId } = input;
        for (let attempt = 0; ; attempt++) {
          const won = await db.one<{ after_seq: number }>(
            `INSERT INTO call_batches (tenant_id, agent_id, key, body_hash, state, after_seq, started_by, created_at)
             VALUES ($1, $2, $3, $4, 'running', $5, $6, $7)
             ON CONFLICT (tenant_id, agent_id, key) DO UPDATE SET
               body_hash = excluded.body_hash, state = 'running', status = NULL, body = NULL,
               after_seq = excluded.after_seq, started_by = excluded.started_by, created_at = excluded.created_at
             WHERE call_batches.created_at <= $8
             RETURNING after_seq`,
            [tenantId, agentId, key, bodyHash, afterSeq, bootId, at, expired],
          );
          if (won !== undefined) return { kind: 'claimed', afterSeq: Number(won.after_seq) };
          const batch = await get(input, at);
          if (batch !== undefined) return { kind: 'held', batch };
          // Released by its claimer (another replica) between the two statements: claim it again.
          if (attempt === 2) throw new Error('the key was claimed and released three times in a row; retry');
        }
      }),
    get: (k) => pgGuarded('read a call batch', () => get(k, now())),
    settle: (k, startedBy, outcome) =>
      pgGuarded('settle a call batch', async () => {
        const { rowCount } = await db.query(
          `UPDATE call_batches SET state = 'done', status = $1, body = $2
           WHERE tenant_id = $3 AND agent_id = $4 AND key = $5 AND state = 'running' AND started_by = $6`,
          [outcome.status, outcome.body, k.tenantId, k.agentId, k.key, startedBy],
        );
        return rowCount > 0;
      }),
    release: (k, startedBy) =>
      pgGuarded('release a call batch', async () => {
        await db.query(
          `DELETE FROM call_batches
           WHERE tenant_id = $1 AND agent_id = $2 AND key = $3 AND state = 'running' AND started_by = $4`,
          [k.tenantId, k.agentId, k.key, startedBy],
        );
      }),
  };
};
