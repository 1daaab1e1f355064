// What each board action may do, as pure functions over a board's tasks (the board runs them
// inside one store transaction). The rules, which the tool descriptions state to the model:
// - ready: pending, and every blocked_by task completed (an owner does not matter: a pending task
//   reserved for someone by reassign is ready for that one to claim).
// - Every update names the revision it read; a stale one is REVISION_CONFLICT with the current
//   revision in its message and data. Every change adds 1 to the revision.
// - claim: a ready task, unowned or reserved for the caller → in_progress, owner the caller.
// - release: an in_progress task, by its owner or the lead → pending, unowned.
// - complete: an in_progress task, by its owner only → completed (its dependents may become ready).
// - reopen: a completed task, by anyone in the team → pending, unowned.
// - edit (subject, description, write_scopes), set_dependencies (blocked_by, pending tasks only),
//   reassign (owner; pending or in_progress) and delete: by anyone while the task is unowned,
//   else by its owner or the lead (NOT_TASK_OWNER).
// - write_scopes are the lead's to give (create or edit; DENIED for anyone else): scopes are set by
//   whoever assigns the work, never by the one who does it (grants.ts says what they grant).
// - blocked_by names tasks of the same board, never the task itself, and never closes a cycle
//   (DEPENDENCY_CYCLE naming it). A deleted agent's unfinished tasks go back to pending, unowned.
//   delete refuses a task others are blocked by (TASK_HAS_DEPENDENTS):
//   unlinking them silently would make them ready without anyone deciding it.
import { SandboxError } from '../../errors.ts';
import { normaliseScope } from './scopes.ts';
import type { BoardLimits, TaskAction, TaskView, TeamTaskRecord } from './types.ts';

/** Who acts: the caller and its team's lead. */
export interface Actor {
  id: string;
  lead: string;
}

export interface CreateInput {
  subject: string;
  description: string;
  blocked_by?: string[] | undefined;
  write_scopes?: string[] | undefined;
}

export interface UpdateInput {
  task_id: string;
  expected_revision: number;
  action: TaskAction;
  subject?: string | undefined;
  description?: string | undefined;
  blocked_by?: string[] | undefined;
  write_scopes?: string[] | undefined;
  /** For reassign: an agent id of the team (names are resolved before the rules run). */
  owner?: string | undefined;
}

type Board = ReadonlyMap<string, TeamTaskRecord>;

export const boardOf = (tasks: readonly TeamTaskRecord[]): Board => new Map(tasks.map((t) => [t.id, t]));

const openBlockers = (task: TeamTaskRecord, board: Board): string[] =>
  task.blockedBy.filter((id) => board.get(id)?.status !== 'completed');

export const isReady = (task: TeamTaskRecord, board: Board): boolean =>
  task.status === 'pending' && openBlockers(task, board).length === 0;

export const viewOf = (task: TeamTaskRecord, board: Board): TaskView => ({
  task_id: task.id,
  subject: task.subject,
  description: task.description,
  status: task.status,
  owner: task.owner ?? null,
  blocked_by: task.blockedBy,
  open_blockers: openBlockers(task, board),
  ready: isReady(task, board),
  write_scopes: task.writeScopes,
  revision: task.revision,
  created_by: task.createdBy,
  created_at: new Date(task.createdAt).toISOString(),
  updated_at: new Date(task.updatedAt).toISOString(),
});

const invalid = (message: string, data?: Record<string, unknown>) =>
  new SandboxError('INVALID_ARGUMENTS', message, data === undefined ? {} : { data });

export const taskOf = (board: Board, id: string): TeamTaskRecord => {
  const task = board.get(id);
  if (task === undefined)
    throw new SandboxError(
      'NOT_FOUND',
      `There is no task ${JSON.stringify(id)} on this board; team_task_list shows its tasks.`,
      { data: { task_id: id } },
    );
  return task;
};

const checkText = (field: string, value: string, max: number): string => {
  if (value.trim().length === 0) throw invalid(`${field} must not be empty.`);
  if (value.length > max)
    throw new SandboxError('LIMIT_EXCEEDED', `${field} has ${value.length} characters; at most ${max} fit.`, {
      data: { field, limit: max },
    });
  return value;
};

export const checkScopes = (scopes: readonly string[], limits: BoardLimits): string[] => {
  if (scopes.length > limits.maxScopesPerTask)
    throw new SandboxError(
      'LIMIT_EXCEEDED',
      `A task has at most ${limits.maxScopesPerTask} write scopes; ${scopes.length} were given.`,
      { data: { limit: limits.maxScopesPerTask } },
    );
  return [...new Set(scopes.map((s) => normaliseScope(s, limits.maxScopeChars)))];
};

/** The cycle `blockedBy` would close for task `id`, as [id, b, …, id]; undefined when none. */
export const cycleOf = (board: Board, id: string, blockedBy: readonly string[]): string[] | undefined => {
  const seen = new Set<string>();
  const walk = (at: string, path: string[]): string[] | undefined => {
    if (at === id) return [...path, at];
    if (seen.has(at)) return undefined;
    seen.add(at);
    for (const next of board.get(at)?.blockedBy ?? []) {
      const found = walk(next, [...path, at]);
      if (found) return found;
    }
    return undefined;
  };
  for (const blocker of blockedBy) {
    const found = walk(blocker, [id]);
    if (found) return found;
  }
  return undefined;
};

/** Validated blocked_by of task `id` (undefined for a new task): same board, no duplicates, no cycle. */
export const checkBlockers = (
  board: Board,
  id: string | undefined,
  blockedBy: readonly string[],
  limits: BoardLimits,
): string[] => {
  const unique = [...new Set(blockedBy)];
  if (unique.length > limits.maxBlockers)
    throw new SandboxError(
      'LIMIT_EXCEEDED',
      `A task may be blocked by at most ${limits.maxBlockers} tasks; ${unique.length} were given.`,
      { data: { limit: limits.maxBlockers } },
    );
  const unknown = unique.filter((b) => !board.has(b) && b !== id);
  if (unknown.length > 0)
    throw invalid(
      `blocked_by names ${unknown.map((b) => JSON.stringify(b)).join(', ')}, not on this board; a task can only be blocked by tasks of its own team's board.`,
      { unknown },
    );
  if (id !== undefined) {
    const cycle = cycleOf(board, id, unique);
    if (cycle !== undefined)
      throw new SandboxError(
        'DEPENDENCY_CYCLE',
        `Task ${id} cannot be blocked by ${unique.join(', ')}: that closes the cycle ${cycle.join(' → ')} (each blocked by the next). Remove one of those dependencies.`,
        { data: { cycle } },
      );
  }
  return unique;
};

/** Write scopes are the team lead's to set; anyone else giving some is DENIED. */
const checkScopesBy = (scopes: readonly string[] | undefined, actor: Actor): void => {
  if (scopes === undefined || actor.id === actor.lead) return;
  throw new SandboxError(
    'DENIED',
    'Only the team lead sets write_scopes: scopes are set by whoever assigns the work. Leave them out, or ask the lead (send_message to "lead") to set them.',
  );
};

/** A new task's record (its id, times and creator given). */
export const newTask = (
  board: Board,
  input: CreateInput,
  limits: BoardLimits,
  meta: { id: string; by: Actor; now: number },
): TeamTaskRecord => {
  checkScopesBy(input.write_scopes?.length === 0 ? undefined : input.write_scopes, meta.by);
  if (board.size >= limits.maxTasks)
    throw new SandboxError(
      'LIMIT_EXCEEDED',
      `This team's board holds ${board.size} tasks, the most it may; delete finished tasks first.`,
      { data: { limit: limits.maxTasks } },
    );
  return {
    id: meta.id,
    subject: checkText('subject', input.subject, limits.maxSubjectChars),
    description: checkText('description', input.description, limits.maxDescriptionChars),
    status: 'pending',
    blockedBy: checkBlockers(board, undefined, input.blocked_by ?? [], limits),
    writeScopes: checkScopes(input.write_scopes ?? [], limits),
    revision: 1,
    createdBy: meta.by.id,
    createdAt: meta.now,
    updatedAt: meta.now,
  };
};

/** Which optional fields each action takes; any other is refused, so a mistaken call says so. */
const FIELDS: Record<TaskAction, readonly (keyof UpdateInput)[]> = {
  claim: [],
  release: [],
  edit: ['subject', 'description', 'write_scopes'],
  set_dependencies: ['blocked_by'],
  complete: [],
  reopen: [],
  reassign: ['owner'],
  delete: [],
};
const OPTIONAL: readonly (keyof UpdateInput)[] = [
  'subject',
  'description',
  'blocked_by',
  'write_scopes',
  'owner',
];

export const checkFields = (input: UpdateInput): void => {
  const allowed = FIELDS[input.action];
  const extra = OPTIONAL.filter((f) => input[f] !== undefined && !allowed.includes(f));
  if (extra.length > 0)
    throw invalid(
      `${extra.join(', ')} ${extra.length === 1 ? 'is' : 'are'} not used by action ${input.action}${allowed.length === 0 ? '' : ` (it takes ${allowed.join(', ')})`}.`,
    );
  if (input.action === 'edit' && allowed.every((f) => input[f] === undefined))
    throw invalid('edit needs at least one of subject, description, write_scopes.');
  if (input.action === 'set_dependencies' && input.blocked_by === undefined)
    throw invalid('set_dependencies needs blocked_by (an empty list removes every dependency).');
  if (input.action === 'reassign' && input.owner === undefined)
    throw invalid('reassign needs owner: the teammate (agent id or name) to hold the task.');
};

const stateError = (task: TeamTaskRecord, action: TaskAction, needs: string) =>
  new SandboxError(
    'TASK_STATE',
    `Task ${task.id} is ${task.status}; ${action} needs a task that is ${needs}.`,
    { data: { task_id: task.id, status: task.status } },
  );

const ownerError = (task: TeamTaskRecord, action: TaskAction, who: string) =>
  new SandboxError(
    'NOT_TASK_OWNER',
    `Task ${task.id} is held by ${task.owner}; only ${who} may ${action} it.`,
    { data: { task_id: task.id, owner: task.owner ?? null } },
  );

/** Unowned, or owned by the caller, or the caller leads the team. */
const mayChange = (task: TeamTaskRecord, actor: Actor): boolean =>
  task.owner === undefined || task.owner === actor.id || actor.id === actor.lead;

/**
 * The task after `input` (checked against its revision and the rules above), or 'deleted'.
 * Fields are checked (checkFields) before.
 */
export const applyUpdate = (
  board: Board,
  input: UpdateInput,
  actor: Actor,
  limits: BoardLimits,
  now: number,
): TeamTaskRecord | 'deleted' => {
  const task = taskOf(board, input.task_id);
  if (input.expected_revision !== task.revision)
    throw new SandboxError(
      'REVISION_CONFLICT',
      `Task ${task.id} is at revision ${task.revision}, not ${input.expected_revision}: it changed since you read it. Read it again (team_task_get) and decide with what it says now.`,
      { data: { task_id: task.id, currentRevision: task.revision } },
    );
  const next: TeamTaskRecord = { ...task, revision: task.revision + 1, updatedAt: now };
  const { action } = input;
  const guardChange = () => {
    if (!mayChange(task, actor)) throw ownerError(task, action, 'its owner or the team lead');
  };
  switch (action) {
    case 'claim': {
      if (task.status !== 'pending') throw stateError(task, action, 'pending');
      if (task.owner !== undefined && task.owner !== actor.id)
        throw ownerError(task, action, 'the teammate it is reserved for (or the lead, by reassign)');
      const open = openBlockers(task, board);
      if (open.length > 0)
        throw new SandboxError(
          'TASK_BLOCKED',
          `Task ${task.id} is not ready: it is blocked by ${open.join(', ')}, not completed yet. Claim a ready task (team_task_list with ready: true).`,
          { data: { task_id: task.id, open } },
        );
      return { ...next, status: 'in_progress', owner: actor.id };
    }
    case 'release':
      if (task.status !== 'in_progress') throw stateError(task, action, 'in_progress');
      if (task.owner !== actor.id && actor.id !== actor.lead)
        throw ownerError(task, action, 'its owner or the team lead');
      return { ...withoutOwner(next), status: 'pending' };
    case 'complete':
      if (task.status !== 'in_progress') throw stateError(task, action, 'in_progress (claim it first)');
      if (task.owner !== actor.id) throw ownerError(task, action, 'its owner');
      return { ...next, status: 'completed' };
    case 'reopen':
      if (task.status !== 'completed') throw stateError(task, action, 'completed');
      return { ...withoutOwner(next), status: 'pending' };
    case 'edit':
      guardChange();
      checkScopesBy(input.write_scopes, actor);
      return {
        ...next,
        ...(input.subject === undefined
          ? {}
          : { subject: checkText('subject', input.subject, limits.maxSubjectChars) }),
        ...(input.description === undefined
          ? {}
          : { description: checkText('description', input.description, limits.maxDescriptionChars) }),
        ...(input.write_scopes === undefined ? {} : { writeScopes: checkScopes(input.write_scopes, limits) }),
      };
    case 'set_dependencies':
      guardChange();
      if (task.status !== 'pending') throw stateError(task, action, 'pending');
      return { ...next, blockedBy: checkBlockers(board, task.id, input.blocked_by ?? [], limits) };
    case 'reassign':
      guardChange();
      if (task.status === 'completed') throw stateError(task, action, 'pending or in_progress');
      return { ...next, owner: input.owner as string };
    case 'delete': {
      guardChange();
      const dependents = [...board.values()].filter((t) => t.blockedBy.includes(task.id)).map((t) => t.id);
      if (dependents.length > 0)
        throw new SandboxError(
          'TASK_HAS_DEPENDENTS',
          `Task ${task.id} cannot be deleted: ${dependents.join(', ')} ${dependents.length === 1 ? 'is' : 'are'} blocked by it. Change their dependencies (set_dependencies) first.`,
          { data: { task_id: task.id, dependents } },
        );
      return 'deleted';
    }
  }
};

/** The task of a deleted owner, back to pending and unowned (a release nobody asked for). */
export const ownerGone = (task: TeamTaskRecord, now: number): TeamTaskRecord => ({
  ...withoutOwner(task),
  status: 'pending',
  revision: task.revision + 1,
  updatedAt: now,
});

const withoutOwner = (task: TeamTaskRecord): TeamTaskRecord => {
  const { owner: _owner, ...rest } = task;
  return rest;
};
