// The TeamStore port: child runs and mailboxes as every backend keeps them (libsql: teams.ts,
// PostgreSQL: pg/teams.ts, their shared rows: teams-rows.ts). Types only.

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
   * is its sender's unread reports in this mailbox), so no message can crowd a report out. A store
   * with a wake-up bus announces the post on it (`mail`, the recipient's id).
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
