// The team task board service: each team's durable board (store.teamBoards), the rules of
// rules.ts run inside one store transaction per change, the caller's team found through the
// TeamDirectory port, and every change told twice: as a `team.task` event on the team lead's
// session log (log-only; so a client reading the lead's events, and wait_agent, see team progress)
// and to onBoardChange listeners, after the change committed.
// Invariants: an agent only ever reaches its own team's board (the directory decides, per call);
// owners are agent ids of the team (names given to reassign or list are resolved to ids first);
// limits are the tenant's (limitsOf over the service's own, over DEFAULT_BOARD_LIMITS); a change and
// the write grant it gives (grants.ts) commit in the same transaction.
// What bounds an agent's writes (writeBounds, for the guard): the scoped tasks it holds, its own
// grant, and the grant of every agent above it (a child writes only where its parents may).
import { SandboxError } from '../../errors.ts';
import type { TeamBoardStore } from '../../store/team-board.ts';
import type { EventLog } from '../../store/types.ts';
import { soloDirectory } from './directory.ts';
import { grantAfter } from './grants.ts';
import {
  type Actor,
  applyUpdate,
  boardOf,
  type CreateInput,
  checkFields,
  isReady,
  newTask,
  ownerGone,
  taskOf,
  type UpdateInput,
  viewOf,
} from './rules.ts';
import {
  type BoardChange,
  type BoardLimits,
  DEFAULT_BOARD_LIMITS,
  DEFAULT_PAGE,
  type TaskView,
  type TeamDirectory,
  type TeamTaskStatus,
  type WriteBounds,
} from './types.ts';

export interface TeamBoardOptions {
  store: TeamBoardStore;
  /** Where board events go (the lead's session). */
  events: Pick<EventLog, 'append'>;
  /** Who is in which team. Default soloDirectory: every agent leads a team of its own. */
  directory?: TeamDirectory;
  /** The service's limits over DEFAULT_BOARD_LIMITS (host/config.ts DSH_TEAM_*). */
  limits?: Partial<BoardLimits>;
  /** Each tenant's limits over the service's. */
  limitsOf?: (tenantId: string) => Partial<BoardLimits> | undefined;
  now?: () => number;
  /** Told when a change committed but its event could not be appended (the board stays right). */
  onError?: (error: unknown) => void;
}

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

export interface TeamBoard {
  forAgent(tenantId: string, agentId: string): AgentBoard;
  /** `listener` is told every committed change of every board; returns the unsubscriber. */
  onBoardChange(listener: (change: BoardChange) => void): () => void;
  /** What bounds the writes of `agentId` (sync: the write guard asks per write). */
  writeBounds(tenantId: string, agentId: string): WriteBounds;
  /**
   * The agent was deleted: its unfinished tasks go back to pending and unowned (each a `release`
   * by it), so the team can claim them; a deleted agent could never complete or release them.
   */
  releaseOwner(agentId: string): void;
}

export function createTeamBoard(options: TeamBoardOptions): TeamBoard {
  const { store, events } = options;
  const directory = options.directory ?? soloDirectory;
  const now = options.now ?? Date.now;
  const listeners = new Set<(change: BoardChange) => void>();

  const limitsOf = (tenantId: string): BoardLimits => ({
    ...DEFAULT_BOARD_LIMITS,
    ...options.limits,
    ...options.limitsOf?.(tenantId),
  });

  function told(change: BoardChange): void {
    try {
      events.append([
        {
          sessionId: change.teamId,
          type: 'team.task',
          surface: 'log-only',
          data: { action: change.action, by: change.by, task: { ...change.task } },
        },
      ]);
    } catch (error) {
      options.onError?.(error);
    }
    for (const listener of listeners) {
      try {
        listener(change);
      } catch (error) {
        options.onError?.(error);
      }
    }
  }

  /** The agent id `who` names in the team (an id or a member's name); undefined when nobody. */
  async function memberId(teamId: string, who: string): Promise<string | undefined> {
    const members = await directory.members(teamId);
    return (members.find((m) => m.id === who) ?? members.find((m) => m.name === who))?.id;
  }

  function forAgent(tenantId: string, agentId: string): AgentBoard {
    const teamOf = async (): Promise<string> => (await directory.teamOf(agentId)) ?? agentId;

    return {
      async create(input) {
        const teamId = await teamOf();
        const limits = limitsOf(tenantId);
        const view = store.write(tenantId, teamId, (tx) => {
          const board = boardOf(tx.tasks());
          // Checked before an id is drawn, so a refused create does not use one up.
          const by = { id: agentId, lead: teamId };
          const checked = newTask(board, input, limits, { id: '', by, now: now() });
          const task = { ...checked, id: tx.nextId() };
          tx.insert(task);
          return viewOf(task, board);
        });
        told({ tenantId, teamId, action: 'create', by: agentId, task: view });
        return view;
      },

      async get(taskId) {
        const board = boardOf(store.tasks(tenantId, await teamOf()));
        return viewOf(taskOf(board, taskId), board);
      },

      async list(query) {
        const teamId = await teamOf();
        const limits = limitsOf(tenantId);
        const limit = Math.min(query.limit ?? DEFAULT_PAGE, limits.maxPage);
        const owner =
          query.owner === undefined ? undefined : ((await memberId(teamId, query.owner)) ?? query.owner);
        const tasks = store.tasks(tenantId, teamId);
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
      },

      async update(input) {
        checkFields(input);
        const teamId = await teamOf();
        const actor: Actor = { id: agentId, lead: teamId };
        let owner: string | undefined;
        if (input.owner !== undefined) {
          owner = await memberId(teamId, input.owner);
          if (owner === undefined)
            throw new SandboxError(
              'INVALID_ARGUMENTS',
              `owner ${JSON.stringify(input.owner)} is not a member of this team; give a teammate's agent id or name (list_agents shows them).`,
            );
        }
        const limits = limitsOf(tenantId);
        const resolved = { ...input, ...(owner === undefined ? {} : { owner }) };
        const view = store.write(tenantId, teamId, (tx) => {
          const board = boardOf(tx.tasks());
          const next = applyUpdate(board, resolved, actor, limits, now());
          if (next === 'deleted') {
            const before = taskOf(board, input.task_id);
            tx.remove(before.id);
            return { ...viewOf(before, board), deleted: true as const };
          }
          const grantee = next.owner;
          const grant =
            grantee === undefined
              ? undefined
              : grantAfter(next, resolved, actor, tx.grantOf(grantee), limits);
          if (grantee !== undefined && grant !== undefined) tx.setGrant(grantee, grant);
          tx.update(next);
          return viewOf(next, new Map([...board, [next.id, next]]));
        });
        told({ tenantId, teamId, action: input.action, by: agentId, task: view });
        return view;
      },
    };
  }

  return {
    forAgent,
    onBoardChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    releaseOwner(agentId) {
      // Called from a delete, which must not fail for it: failures go to onError.
      try {
        for (const { tenantId, teamId } of store.boardsOwning(agentId)) {
          const released = store.write(tenantId, teamId, (tx) => {
            const before = tx.tasks();
            const gone = new Set(
              before.filter((t) => t.owner === agentId && t.status !== 'completed').map((t) => t.id),
            );
            const after = before.map((t) => (gone.has(t.id) ? ownerGone(t, now()) : t));
            const board = boardOf(after);
            const changed = after.filter((t) => gone.has(t.id));
            for (const task of changed) tx.update(task);
            return changed.map((t) => viewOf(t, board));
          });
          for (const task of released) told({ tenantId, teamId, action: 'release', by: agentId, task });
        }
      } catch (error) {
        options.onError?.(error);
      }
    },
    writeBounds(tenantId, agentId) {
      const held = store
        .scopedHeldBy(tenantId, agentId)
        .map((t) => ({ taskId: t.id, subject: t.subject, scopes: t.writeScopes }));
      const above = directory.ancestors(agentId);
      // An ancestor is gone (its deletion is under way): what it may write is unknown, so nothing.
      if (above === undefined) return { held, grants: [], broken: true };
      const grants = [agentId, ...above].flatMap((id) => {
        const scopes = store.grantOf(tenantId, id);
        return scopes === undefined ? [] : [{ agentId: id, own: id === agentId, scopes }];
      });
      return { held, grants };
    },
  };
}
