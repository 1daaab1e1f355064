// The task board's vocabulary: the team directory port it consumes (who is in which team), its
// limits, the actions of team_task_update, the task as tools and events show it, and the change
// notice a waiter (wait_agent, a client) gets. Types and defaults only.
import type { TeamTaskRecord, TeamTaskStatus } from '../../store/team-board.ts';

export type { TeamTaskRecord, TeamTaskStatus };

/**
 * Which team an agent belongs to, and who is in a team. A team's id is its lead agent's id. The
 * teams room implements it (host/teams/directory.ts); soloDirectory is the default.
 */
export interface TeamDirectory {
  /** The team of `agentId`; undefined when it is in none (then it leads its own one-agent team). */
  teamOf(agentId: string): Promise<string | undefined>;
  /** The team's members, the lead included. */
  members(teamId: string): Promise<{ id: string; name?: string }[]>;
  /**
   * The agents above `agentId`, the one that made it first; [] for a top-level agent; undefined
   * when the chain is broken (an ancestor is gone) or too long (one store read per level).
   */
  ancestors(agentId: string): Promise<string[] | undefined>;
}

/** Bounds of one tenant's boards; the service's come from DSH_TEAM_* (host/config.ts). */
export interface BoardLimits {
  /** Tasks one board holds, completed ones included. */
  maxTasks: number;
  maxSubjectChars: number;
  maxDescriptionChars: number;
  /** Write scopes of one task. */
  maxScopesPerTask: number;
  /** Characters of one write scope. */
  maxScopeChars: number;
  /** Tasks one task may be blocked by. */
  maxBlockers: number;
  /** Most tasks one team_task_list page shows (its `limit`). */
  maxPage: number;
}

export const DEFAULT_BOARD_LIMITS: BoardLimits = {
  maxTasks: 500,
  maxSubjectChars: 200,
  maxDescriptionChars: 8000,
  maxScopesPerTask: 32,
  maxScopeChars: 512,
  maxBlockers: 64,
  maxPage: 100,
};

/** The default page size of team_task_list. */
export const DEFAULT_PAGE = 50;

export const TASK_ACTIONS = [
  'claim',
  'release',
  'edit',
  'set_dependencies',
  'complete',
  'reopen',
  'reassign',
  'delete',
] as const;

export type TaskAction = (typeof TASK_ACTIONS)[number];

export const TASK_STATUSES = ['pending', 'in_progress', 'completed'] as const;

/** A task as the tools return it (the structured `value`) and as board events carry it. */
export interface TaskView {
  task_id: string;
  subject: string;
  description: string;
  status: TeamTaskStatus;
  /** The agent holding (in_progress) or reserved for (pending) it; null when nobody. */
  owner: string | null;
  blocked_by: string[];
  /** Ids in blocked_by that are not completed yet. */
  open_blockers: string[];
  /** Pending and every blocked_by task completed (see the tool descriptions). */
  ready: boolean;
  write_scopes: string[];
  revision: number;
  created_by: string;
  /** ISO 8601. */
  created_at: string;
  updated_at: string;
  /** Only in the answer (and event) of a delete. */
  deleted?: true;
}

/** What one change of a board looks like to onBoardChange listeners. */
export interface BoardChange {
  tenantId: string;
  /** The team (its lead's agent id); the event is on the lead's session log. */
  teamId: string;
  action: 'create' | TaskAction;
  /** The agent that made the change. */
  by: string;
  /** The task after the change (before it, with `deleted`, for a delete). */
  task: TaskView;
}

/** A held task whose write scopes confine its owner's writes (the guard's view). */
export interface HeldScopes {
  taskId: string;
  subject: string;
  scopes: string[];
}

/** A write grant that bounds an agent's writes: its own, or one of an ancestor's. */
export interface GrantBound {
  /** The agent the grant is of. */
  agentId: string;
  /** Whether it is the writing agent's own (else an ancestor's, which a child inherits). */
  own: boolean;
  scopes: string[];
}

/**
 * Everything that bounds an agent's file writes (the guard's view): a written path must lie in one
 * of the held tasks' scopes (when it holds any) and in every grant. Nothing held and no grant:
 * free; `broken`: refused (an ancestor is gone, so what it may write is unknown).
 */
export interface WriteBounds {
  held: HeldScopes[];
  grants: GrantBound[];
  broken?: true;
}
