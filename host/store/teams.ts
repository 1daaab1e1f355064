// Child runs and mailboxes (migration 10): what a parent sees of each child's work, and the durable
// queue of messages each agent has not read yet. Links themselves live on the agents' rows
// (agents.ts). Invariants: a mailbox keeps its order (ids increase); an item is delivered at most
// once and a cancelled one never; a run is settled by the host request that runs it only while it
// still names that request (a later wake-up or a report wins over a stale answer).
import { SandboxError } from '../errors.ts';
import { type Database, guarded, immediate } from './db.ts';

/**
 * A client's or a model's text (a run's description and output, a message's body) as both backends
 * can store it: a NUL becomes U+FFFD. PostgreSQL's text refuses a NUL (a refused settle would
 * leave its run running for good, and fail every start's resume() again) and libsql cuts the text
 * at it.
 */
export const storableText = (text: string): string =>
  text.includes('\0') ? text.replaceAll('\0', '\uFFFD') : text;

/** Where a child's work stands, as its parent sees it. */
export type ChildStatus =
  /** Its client runs it now (a `subagent` or wake-up request is pending). */
  | 'running'
  /** It reported (or its client answered the request); it takes further messages. */
  | 'completed'
  /** Its client answered with an error, or nobody answered in time. */
  | 'failed'
  /** Its run was cancelled (the parent's call aborted, or the child was deleted). */
  | 'cancelled';

export interface ChildRun {
  agentId: string;
  tenantId: string;
  /** Who is told its outcome (kept here: the child's row may be deleted by then). */
  parentId: string;
  description: string;
  status: ChildStatus;
  /** Its last report (or the text its client answered with). */
  output?: string;
  /** The host request its client is running it by, while one is pending. */
  requestId?: string;
  updatedAt: number;
}

/** What a mailbox item is. */
export type MailKind =
  /** send_message: read when the recipient gets to it. */
  | 'message'
  /** followup_task: also wakes an idle recipient. */
  | 'followup'
  /** The service telling a parent that a child reported or finished. */
  | 'report';

export interface MailItem {
  id: number;
  tenantId: string;
  /** The recipient. */
  agentId: string;
  /** The sender's agent id. */
  fromId: string;
  kind: MailKind;
  body: string;
  createdAt: number;
  deliveredAt?: number;
}

export interface NewMailItem {
  tenantId: string;
  agentId: string;
  fromId: string;
  kind: MailKind;
  body: string;
}

/** Child runs and mailboxes. Every method is asynchronous, so a network database can back it. */
export interface TeamStore {
  /** Creates or replaces the run of `agentId`. */
  putRun(run: Omit<ChildRun, 'updatedAt'>): Promise<ChildRun>;
  run(agentId: string): Promise<ChildRun | undefined>;
  /** Every run with this status (all tenants): what start-up resumes watching. */
  runsWith(status: ChildStatus): Promise<ChildRun[]>;
  /**
   * Sets status and output, and forgets the request, only while the run is `running` and names
   * `requestId` (undefined: any request). False when the run had moved on.
   */
  settleRun(
    agentId: string,
    requestId: string | undefined,
    outcome: { status: ChildStatus; output?: string },
  ): Promise<boolean>;
  /**
   * Queues an item; MAILBOX_FULL when the recipient already holds `max` undelivered ones of its
   * room. Messages and followups share one room; reports count apart, per sender (a report's room
   * is its sender's unread reports in this mailbox), so no message can crowd a report out.
   */
  post(item: NewMailItem, max: number): Promise<MailItem>;
  /** The recipient's undelivered items, oldest first. */
  undelivered(agentId: string): Promise<MailItem[]>;
  /** Marks the recipient's undelivered items up to `upToId` delivered; resolves to how many. */
  deliver(agentId: string, upToId: number): Promise<number>;
  /** The recipient's items after `afterId` (delivered or not, never cancelled), oldest first. */
  list(agentId: string, options?: { afterId?: number; limit?: number }): Promise<MailItem[]>;
  /** Cancels the recipient's undelivered items (it was deleted); resolves to how many. */
  cancelPending(agentId: string): Promise<number>;
}

interface MailRow {
  id: number;
  tenant_id: string;
  agent_id: string;
  from_id: string;
  kind: MailKind;
  body: string;
  created_at: number;
  delivered_at: number | null;
}

interface RunRow {
  agent_id: string;
  tenant_id: string;
  parent_id: string;
  description: string;
  status: ChildStatus;
  output: string | null;
  request_id: string | null;
  updated_at: number;
}

const mailOf = (r: MailRow): MailItem => ({
  id: r.id,
  tenantId: r.tenant_id,
  agentId: r.agent_id,
  fromId: r.from_id,
  kind: r.kind,
  body: r.body,
  createdAt: r.created_at,
  ...(r.delivered_at === null ? {} : { deliveredAt: r.delivered_at }),
});

const runOf = (r: RunRow): ChildRun => ({
  agentId: r.agent_id,
  tenantId: r.tenant_id,
  parentId: r.parent_id,
  description: r.description,
  status: r.status,
  ...(r.output === null ? {} : { output: r.output }),
  ...(r.request_id === null ? {} : { requestId: r.request_id }),
  updatedAt: r.updated_at,
});

/** The libsql TeamStore: each method runs its statements synchronously and resolves with the result. */
export const createTeamStore = (db: Database, now: () => number = Date.now): TeamStore => {
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
      guarded('store a child run', () =>
        putRun.run(
          run.agentId,
          run.tenantId,
          run.parentId,
          storableText(run.description),
          run.status,
          run.output === undefined ? null : storableText(run.output),
          run.requestId ?? null,
          stored.updatedAt,
        ),
      );
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
      return guarded('queue a message', () =>
        immediate(db, () => {
          const report = item.kind === 'report';
          const { n } = (
            report ? countReports.all(item.agentId, item.fromId) : countMessages.all(item.agentId)
          )[0] as { n: number };
          if (n >= max)
            throw new SandboxError(
              'MAILBOX_FULL',
              report
                ? `The mailbox of agent ${item.agentId} holds ${n} unread reports of yours, the most one sender may leave there; wait until it reads them (your latest output is in its list_agents) and report again.`
                : `The mailbox of agent ${item.agentId} holds ${n} unread messages, its most; wait until it reads some (wait_agent) and send again.`,
              { data: { agentId: item.agentId, max, kind: report ? 'report' : 'message' } },
            );
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
    },
    undelivered: async (agentId) =>
      guarded('read a mailbox', () => (undelivered.all(agentId) as MailRow[]).map(mailOf)),
    deliver: async (agentId, upToId) =>
      guarded('deliver messages', () => deliver.run(now(), agentId, upToId).changes),
    list: async (agentId, options = {}) =>
      guarded('list a mailbox', () =>
        (list.all(agentId, options.afterId ?? 0, Math.min(options.limit ?? 100, 1000)) as MailRow[]).map(
          mailOf,
        ),
      ),
    cancelPending: async (agentId) => guarded('cancel messages', () => cancel.run(now(), agentId).changes),
  };
};
