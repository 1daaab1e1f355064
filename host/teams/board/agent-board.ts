// One agent's view of its team's board (board.ts hands it out; state.ts holds what it shares):
// what the team_task_* tools call. The rules of rules.ts run inside one store transaction per
// change. Invariants: an agent only ever reaches its own team's board (the directory decides, per
// call); owners are agent ids of the team (names given to reassign or list are resolved to ids
// first); a change and the write grant it gives (grants.ts) commit in the same transaction; a
// task stored as owned by an agent deleted meanwhile goes back to the team (releaseIfGone).
import { SandboxError } from '../../errors.ts';
import { grantAfter } from './grants.ts';
import { releaseOwner } from './release.ts';
import {
  type Actor,
  applyUpdate,
  boardOf,
  type CreateInput,
  checkFields,
  isReady,
  newTask,
  taskOf,
  type UpdateInput,
  viewOf,
} from './rules.ts';
import { type BoardState, limitsOf, memberId, told } from './state.ts';
import { DEFAULT_PAGE, type TaskView, type TeamTaskStatus } from './types.ts';

export interface ListQuery {
  status?: TeamTaskStatus | undefined;
  /** An agent id or a teammate's name. */
  owner?: string | undefined;
  ready?: boolean | undefined;
  /** The `next_cursor` of the previous page; absent for the first. */
  cursor?: number | undefined;
  limit?: number | undefined;
}

export interface TaskPage {
  tasks: TaskView[];
  /** Pass as `cursor` for the next page; null on the last one. */
  next_cursor: number | null;
  /** Tasks matching the filters, on every page together. */
  total: number;
}

/** One agent's view of its team's board: what the team_task_* tools call. */
export interface AgentBoard {
  create(input: CreateInput): Promise<TaskView>;
  get(taskId: string): Promise<TaskView>;
  list(query: ListQuery): Promise<TaskPage>;
  update(input: UpdateInput): Promise<TaskView>;
}

export function forAgent(s: BoardState, tenantId: string, agentId: string): AgentBoard {
  return {
    create: (input) => createTask(s, tenantId, agentId, input),
    get: (taskId) => getTask(s, tenantId, agentId, taskId),
    list: (query) => listTasks(s, tenantId, agentId, query),
    update: (input) => updateTask(s, tenantId, agentId, input),
  };
}

/** The agent's team: the directory's, or a team of its own. */
async function teamOf(s: BoardState, agentId: string): Promise<string> {
  return (await s.directory.teamOf(agentId)) ?? agentId;
}

async function createTask(
  s: BoardState,
  tenantId: string,
  agentId: string,
  input: CreateInput,
): Promise<TaskView> {
  const teamId = await teamOf(s, agentId);
  const limits = limitsOf(s, tenantId);
  const view = await s.store.write(tenantId, teamId, (tx) => {
    const board = boardOf(tx.tasks());
    // Checked before an id is drawn, so a refused create does not use one up.
    const by = { id: agentId, lead: teamId };
    const checked = newTask(board, input, limits, { id: '', by, now: s.now() });
    const task = { ...checked, id: tx.nextId() };
    tx.insert(task);
    return viewOf(task, board);
  });
  told(s, { tenantId, teamId, action: 'create', by: agentId, task: view });
  return view;
}

async function getTask(s: BoardState, tenantId: string, agentId: string, taskId: string): Promise<TaskView> {
  const board = boardOf(await s.store.tasks(tenantId, await teamOf(s, agentId)));
  return viewOf(taskOf(board, taskId), board);
}

async function listTasks(
  s: BoardState,
  tenantId: string,
  agentId: string,
  query: ListQuery,
): Promise<TaskPage> {
  const teamId = await teamOf(s, agentId);
  const limits = limitsOf(s, tenantId);
  const limit = Math.min(query.limit ?? DEFAULT_PAGE, limits.maxPage);
  const owner =
    query.owner === undefined ? undefined : ((await memberId(s, teamId, query.owner)) ?? query.owner);
  const tasks = await s.store.tasks(tenantId, teamId);
  const board = boardOf(tasks);
  const matching = tasks.filter(
    (t) =>
      (query.status === undefined || t.status === query.status) &&
      (owner === undefined || t.owner === owner) &&
      (query.ready === undefined || isReady(t, board) === query.ready),
  );
  const after = matching.filter((t) => Number(t.id) > (query.cursor ?? 0));
  const page = after.slice(0, limit);
  const last = page.at(-1);
  return {
    tasks: page.map((t) => viewOf(t, board)),
    next_cursor: after.length > page.length && last !== undefined ? Number(last.id) : null,
    total: matching.length,
  };
}

async function updateTask(
  s: BoardState,
  tenantId: string,
  agentId: string,
  input: UpdateInput,
): Promise<TaskView> {
  checkFields(input);
  const teamId = await teamOf(s, agentId);
  const actor: Actor = { id: agentId, lead: teamId };
  let owner: string | undefined;
  if (input.owner !== undefined) {
    owner = await memberId(s, teamId, input.owner);
    if (owner === undefined)
      throw new SandboxError(
        'INVALID_ARGUMENTS',
        `owner ${JSON.stringify(input.owner)} is not a member of this team; give a teammate's agent id or name (list_agents shows them).`,
      );
  }
  const limits = limitsOf(s, tenantId);
  const resolved = { ...input, ...(owner === undefined ? {} : { owner }) };
  const view = await s.store.write(tenantId, teamId, (tx) => {
    const board = boardOf(tx.tasks());
    const next = applyUpdate(board, resolved, actor, limits, s.now());
    if (next === 'deleted') {
      const before = taskOf(board, input.task_id);
      tx.remove(before.id);
      return { ...viewOf(before, board), deleted: true as const };
    }
    const grantee = next.owner;
    const grant =
      grantee === undefined ? undefined : grantAfter(next, resolved, actor, tx.grantOf(grantee), limits);
    if (grantee !== undefined && grant !== undefined) tx.setGrant(grantee, grant);
    tx.update(next);
    return viewOf(next, new Map([...board, [next.id, next]]));
  });
  told(s, { tenantId, teamId, action: input.action, by: agentId, task: view });
  await releaseIfGone(s, teamId, view);
  return view;
}

/**
 * The task's owner deleted while the write was under way: its deletion may have released its
 * tasks before this write stored it as the owner. Read after the write (the directory lists live
 * members only), so whichever comes second sees the other; the task goes back to the team.
 */
async function releaseIfGone(s: BoardState, teamId: string, view: TaskView): Promise<void> {
  const { owner } = view;
  // A completed (or deleted) task keeps its owner as history: the deletion releases neither.
  if (owner === null || view.status === 'completed' || view.deleted === true) return;
  if ((await s.directory.members(teamId)).some((m) => m.id === owner)) return;
  await releaseOwner(s, owner);
  throw new SandboxError('NOT_FOUND', `Agent ${owner} was deleted; the task went back to the team.`, {
    data: { agentId: owner },
  });
}
