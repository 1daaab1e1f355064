// Child runs and mailboxes on PostgreSQL: the TeamStore of ../teams.ts over the same rows
// (`child_runs`, `mailbox`, pg/baseline.ts), with its invariants: a mailbox keeps its order (ids
// come from an identity column, so they increase); an item is delivered at most once and a
// cancelled one never (each is one conditional UPDATE); a run is settled by the host request that
// runs it only while it still names that request (one conditional UPDATE: under READ COMMITTED a
// second settle waits for the first's row lock, then re-checks its WHERE and matches nothing).
// Where Postgres differs: post()'s room check (count the recipient's unread items, then insert)
// rests on libsql's single writer; here two replicas could both count the last free place. There
// is no row to lock for a mailbox that may be empty, so post() takes a transaction-scoped advisory
// lock on the recipient first (pg_advisory_xact_lock of a hash of 'mailbox:' and its agent id):
// posts to one recipient queue behind each other, posts to different ones do not (a hash collision
// only makes two of them queue), and the lock goes with COMMIT or ROLLBACK. The same lock keeps a
// mailbox's ids in commit order: an identity value is drawn at INSERT, and without it a post that
// drew a lower id could commit after a reader had delivered up to a higher one, and be marked
// delivered unseen.
// A post is announced (a `mail` wake-up with the recipient's id, pg/notify.ts) inside its own
// transaction, so every replica hears it with the COMMIT and none of a post rolled back.
import type { ChildRun, TeamStore } from '../teams-port.ts';
import {
  checkMailboxRoom,
  type MailRow,
  mailOf,
  mailPageSize,
  type RunRow,
  runOf,
  runParams,
  storableText,
} from '../teams-rows.ts';
import { type PgDatabase, pgGuarded } from './db.ts';
import type { PgWakeBus } from './notify.ts';

const MAIL = 'id, tenant_id, agent_id, from_id, kind, body, created_at, delivered_at';
const RUN = 'agent_id, tenant_id, parent_id, description, status, output, request_id, updated_at';
const UNREAD = 'agent_id = $1 AND delivered_at IS NULL AND cancelled_at IS NULL';

export const createPgTeamStore = (
  db: PgDatabase,
  now: () => number = Date.now,
  wake?: Pick<PgWakeBus, 'within' | 'here'>,
): TeamStore => ({
  async putRun(run) {
    const stored: ChildRun = { ...run, updatedAt: now() };
    await pgGuarded('store a child run', () =>
      db.query(
        `INSERT INTO child_runs (${RUN}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (agent_id) DO UPDATE SET description = excluded.description,
         status = excluded.status, output = excluded.output, request_id = excluded.request_id,
         updated_at = excluded.updated_at`,
        runParams(stored),
      ),
    );
    return stored;
  },

  run: (agentId) =>
    pgGuarded('read a child run', async () => {
      const row = await db.one<RunRow>(`SELECT ${RUN} FROM child_runs WHERE agent_id = $1`, [agentId]);
      return row === undefined ? undefined : runOf(row);
    }),

  runsWith: (status) =>
    pgGuarded('list child runs', async () =>
      (
        await db.many<RunRow>(`SELECT ${RUN} FROM child_runs WHERE status = $1 ORDER BY updated_at`, [status])
      ).map(runOf),
    ),

  settleRun: (agentId, requestId, outcome) =>
    pgGuarded('settle a child run', async () => {
      const { rowCount } = await db.query(
        `UPDATE child_runs SET status = $1, output = coalesce($2, output), request_id = NULL, updated_at = $3
         WHERE agent_id = $4 AND status = 'running' AND ($5::text IS NULL OR request_id = $5)`,
        [
          outcome.status,
          outcome.output === undefined ? null : storableText(outcome.output),
          now(),
          agentId,
          requestId ?? null,
        ],
      );
      return rowCount > 0;
    }),

  post: async (item, max) => {
    const posted = await pgGuarded('queue a message', () =>
      db.tx(async (tx) => {
        // The recipient's posts one at a time (see the header): the count below stays true until COMMIT.
        await tx.query("SELECT pg_advisory_xact_lock(hashtextextended('mailbox:' || $1, 0))", [item.agentId]);
        const report = item.kind === 'report';
        const counted = report
          ? await tx.one<{ n: number }>(
              `SELECT count(*) AS n FROM mailbox WHERE ${UNREAD} AND kind = 'report' AND from_id = $2`,
              [item.agentId, item.fromId],
            )
          : await tx.one<{ n: number }>(
              `SELECT count(*) AS n FROM mailbox WHERE ${UNREAD} AND kind != 'report'`,
              [item.agentId],
            );
        const n = counted?.n ?? 0;
        checkMailboxRoom(item, n, max);
        const createdAt = now();
        const inserted = await tx.one<{ id: number }>(
          `INSERT INTO mailbox (tenant_id, agent_id, from_id, kind, body, created_at)
           VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
          [item.tenantId, item.agentId, item.fromId, item.kind, storableText(item.body), createdAt],
        );
        await wake?.within(tx, 'mail', item.agentId); // other replicas hear it with the COMMIT
        return { ...item, id: inserted!.id, createdAt };
      }),
    );
    wake?.here('mail', item.agentId);
    return posted;
  },

  undelivered: (agentId) =>
    pgGuarded('read a mailbox', async () =>
      (await db.many<MailRow>(`SELECT ${MAIL} FROM mailbox WHERE ${UNREAD} ORDER BY id`, [agentId])).map(
        mailOf,
      ),
    ),

  deliver: (agentId, upToId) =>
    pgGuarded('deliver messages', async () => {
      const { rowCount } = await db.query(
        `UPDATE mailbox SET delivered_at = $2 WHERE ${UNREAD} AND id <= $3`,
        [agentId, now(), upToId],
      );
      return rowCount;
    }),

  list: (agentId, options = {}) =>
    pgGuarded('list a mailbox', async () =>
      (
        await db.many<MailRow>(
          `SELECT ${MAIL} FROM mailbox WHERE agent_id = $1 AND id > $2 AND cancelled_at IS NULL ORDER BY id LIMIT $3`,
          [agentId, options.afterId ?? 0, mailPageSize(options.limit)],
        )
      ).map(mailOf),
    ),

  cancelPending: (agentId) =>
    pgGuarded('cancel messages', async () => {
      const { rowCount } = await db.query(`UPDATE mailbox SET cancelled_at = $2 WHERE ${UNREAD}`, [
        agentId,
        now(),
      ]);
      return rowCount;
    }),
});
