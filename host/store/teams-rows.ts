// The rows of child runs and mailboxes (`child_runs`, `mailbox`) as both backends of the TeamStore
// read and write them: the row types, row → record mappers, a run's insert parameters, the
// mailbox's room error and the list page bound. One module, so the libsql (teams.ts) and the
// PostgreSQL (pg/teams.ts) backends mean the same by every column and refuse with the same words;
// each keeps only its SQL and its transaction. Imports no backend.
import { SandboxError } from '../errors.ts';
import type { ChildRun, ChildStatus, MailItem, MailKind, NewMailItem } from './teams-port.ts';

export interface MailRow {
  id: number;
  tenant_id: string;
  agent_id: string;
  from_id: string;
  kind: MailKind;
  body: string;
  created_at: number;
  delivered_at: number | null;
}

export interface RunRow {
  agent_id: string;
  tenant_id: string;
  parent_id: string;
  description: string;
  status: ChildStatus;
  output: string | null;
  request_id: string | null;
  updated_at: number;
}

export const mailOf = (r: MailRow): MailItem => ({
  id: r.id,
  tenantId: r.tenant_id,
  agentId: r.agent_id,
  fromId: r.from_id,
  kind: r.kind,
  body: r.body,
  createdAt: r.created_at,
  ...(r.delivered_at === null ? {} : { deliveredAt: r.delivered_at }),
});

export const runOf = (r: RunRow): ChildRun => ({
  agentId: r.agent_id,
  tenantId: r.tenant_id,
  parentId: r.parent_id,
  description: r.description,
  status: r.status,
  ...(r.output === null ? {} : { output: r.output }),
  ...(r.request_id === null ? {} : { requestId: r.request_id }),
  updatedAt: r.updated_at,
});

/** A run's values in the column order of `child_runs` (agent_id … updated_at). */
/**
 * A client's or a model's text (a run's description and output, a message's body) as both backends
 * can store it: a NUL becomes U+FFFD. PostgreSQL's text refuses a NUL (a refused settle would
 * leave its run running for good, and fail every start's resume() again) and libsql cuts the text
 * at it.
 */
export const storableText = (text: string): string =>
  text.includes('\0') ? text.replaceAll('\0', '\uFFFD') : text;

export const runParams = (run: ChildRun): (string | number | null)[] => [
  run.agentId,
  run.tenantId,
  run.parentId,
  storableText(run.description),
  run.status,
  run.output === undefined ? null : storableText(run.output),
  run.requestId ?? null,
  run.updatedAt,
];

/** MAILBOX_FULL when the recipient holds `n` unread items of the new item's room and `max` is its most. */
export const checkMailboxRoom = (item: NewMailItem, n: number, max: number): void => {
  if (n < max) return;
  const report = item.kind === 'report';
  throw new SandboxError(
    'MAILBOX_FULL',
    report
      ? `The mailbox of agent ${item.agentId} holds ${n} unread reports of yours, the most one sender may leave there; wait until it reads them (your latest output is in its list_agents) and report again.`
      : `The mailbox of agent ${item.agentId} holds ${n} unread messages, its most; wait until it reads some (wait_agent) and send again.`,
    { data: { agentId: item.agentId, max, kind: report ? 'report' : 'message' } },
  );
};

/** How many items one list() call returns: 100 unless asked, never more than 1000. */
export const mailPageSize = (limit: number | undefined): number => Math.min(limit ?? 100, 1000);
