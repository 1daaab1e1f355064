// Child runs and mailboxes (migration 10): what a parent sees of each child's work, and the durable
// queue of messages each agent has not read yet. Links themselves live on the agents' rows
// (agents.ts). Invariants: a mailbox keeps its order (ids increase); an item is delivered at most
// once and a cancelled one never; a run is settled by the host request that runs it only while it
// still names that request (a later wake-up or a report wins over a stale answer).
// A post is announced on the store's wake-up bus (`mail`, the recipient's id) once it is stored.
// The port's types are in teams-port.ts (re-exported here); the rows both backends share in teams-rows.ts.
import { type Database, guarded, immediate } from './db.ts';
import type { ChildRun, TeamStore } from './teams-port.ts';
import {
  checkMailboxRoom,
  type MailRow,
  mailOf,
  mailPageSize,
  type RunRow,
  runOf,
  runParams,
  storableText,
} from './teams-rows.ts';
import type { WakeBus } from './wake-port.ts';

export type { ChildRun, ChildStatus, MailItem, MailKind, NewMailItem, TeamStore } from './teams-port.ts';

/** Where a child's work stands, as its parent sees it. */

/** The libsql TeamStore: each method runs its statements synchronously and resolves with the result. */
export const createTeamStore = (
  db: Database,
  now: () => number = Date.now,
  wake?: Pick<WakeBus, 'publish'>,
): TeamStore => {
  const putRun = db.prepare(
    `INSERT INTO child_runs (agent_id, tenant_id, parent_id, description, status, output, request_id, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (agent_id) DO UPDATE SET description = excluded.description,
     status = excluded.status, output = excluded.output, request_id = excluded.request_id,
     updated_at = excluded.updated_at`,
  );
  const getRun = db.prepare('SELECT * FROM child_runs WHERE agent_id = ?');
  const runsWith = db.prepare('SELECT * FROM child_runs WHERE status = ? ORDER BY updated_at');
  const settle = db.prepare(
    `UPDATE child_runs SET status = ?, output = coalesce(?, output), request_id = NULL, updated_at = ?
     WHERE agent_id = ? AND status = 'running' AND (? IS NULL OR request_id = ?)`,
  );
  const unread = 'agent_id = ? AND delivered_at IS NULL AND cancelled_at IS NULL';
  const countMessages = db.prepare(`SELECT count(*) AS n FROM mailbox WHERE ${unread} AND kind != 'report'`);
  const countReports = db.prepare(
    `SELECT count(*) AS n FROM mailbox WHERE ${unread} AND kind = 'report' AND from_id = ?`,
  );
  const insert = db.prepare(
    'INSERT INTO mailbox (tenant_id, agent_id, from_id, kind, body, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const undelivered = db.prepare(
    'SELECT * FROM mailbox WHERE agent_id = ? AND delivered_at IS NULL AND cancelled_at IS NULL ORDER BY id',
  );
  const deliver = db.prepare(
    'UPDATE mailbox SET delivered_at = ? WHERE agent_id = ? AND id <= ? AND delivered_at IS NULL AND cancelled_at IS NULL',
  );
  const list = db.prepare(
    'SELECT * FROM mailbox WHERE agent_id = ? AND id > ? AND cancelled_at IS NULL ORDER BY id LIMIT ?',
  );
  const cancel = db.prepare(
    'UPDATE mailbox SET cancelled_at = ? WHERE agent_id = ? AND delivered_at IS NULL AND cancelled_at IS NULL',
  );

  return {
    async putRun(run) {
      const stored: ChildRun = { ...run, updatedAt: now() };
      guarded('store a child run', () => putRun.run(...runParams(stored)));
      return stored;
    },
    run: async (agentId) =>
      guarded('read a child run', () => {
        const row = getRun.all(agentId)[0] as RunRow | undefined;
        return row === undefined ? undefined : runOf(row);
      }),
    runsWith: async (status) =>
      guarded('list child runs', () => (runsWith.all(status) as RunRow[]).map(runOf)),
    settleRun: async (agentId, requestId, outcome) =>
      guarded(
        'settle a child run',
        () =>
          settle.run(
            outcome.status,
            outcome.output === undefined ? null : storableText(outcome.output),
            now(),
            agentId,
            requestId ?? null,
            requestId ?? null,
          ).changes > 0,
      ),
    async post(item, max) {
      const posted = guarded('queue a message', () =>
        immediate(db, () => {
          const report = item.kind === 'report';
          const { n } = (
            report ? countReports.all(item.agentId, item.fromId) : countMessages.all(item.agentId)
          )[0] as { n: number };
          checkMailboxRoom(item, n, max);
          const createdAt = now();
          const id = Number(
            insert.run(
              item.tenantId,
              item.agentId,
              item.fromId,
              item.kind,
              storableText(item.body),
              createdAt,
            ).lastInsertRowid,
          );
          return { ...item, id, createdAt };
        }),
      );
      await wake?.publish('mail', item.agentId);
      return posted;
    },
    undelivered: async (agentId) =>
      guarded('read a mailbox', () => (undelivered.all(agentId) as MailRow[]).map(mailOf)),
    deliver: async (agentId, upToId) =>
      guarded('deliver messages', () => deliver.run(now(), agentId, upToId).changes),
    list: async (agentId, options = {}) =>
      guarded('list a mailbox', () =>
        (list.all(agentId, options.afterId ?? 0, mailPageSize(options.limit)) as MailRow[]).map(mailOf),
      ),
    cancelPending: async (agentId) => guarded('cancel messages', () => cancel.run(now(), agentId).changes),
  };
};
