// What the parts of the team task board share (board.ts wires them; agent-board.ts is one agent's
// view): the store, the event log, the team directory, the clock and the change listeners; the
// tenant's limits; how a committed change is told; who a name means in a team.
// Invariants: a change is told only after it committed, twice: as a `team.task` event on the team
// lead's session log (log-only; so a client reading the lead's events, and wait_agent, see team
// progress) and to onBoardChange listeners; a failure to tell goes to onError, never to the caller
// (the board stays right). Limits are the tenant's (limitsOf over the service's own, over
// DEFAULT_BOARD_LIMITS).
import type { TeamBoardStore } from '../../store/team-board.ts';
import type { EventLog } from '../../store/types.ts';
import { type BoardChange, type BoardLimits, DEFAULT_BOARD_LIMITS, type TeamDirectory } from './types.ts';

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

export interface BoardState {
  readonly options: TeamBoardOptions;
  readonly store: TeamBoardStore;
  readonly events: Pick<EventLog, 'append'>;
  readonly directory: TeamDirectory;
  readonly now: () => number;
  readonly listeners: Set<(change: BoardChange) => void>;
}

export function limitsOf(s: BoardState, tenantId: string): BoardLimits {
  return {
    ...DEFAULT_BOARD_LIMITS,
    ...s.options.limits,
    ...s.options.limitsOf?.(tenantId),
  };
}

export function told(s: BoardState, change: BoardChange): void {
  s.events
    .append([
      {
        sessionId: change.teamId,
        type: 'team.task',
        surface: 'log-only',
        data: { action: change.action, by: change.by, task: { ...change.task } },
      },
    ])
    .catch((error: unknown) => s.options.onError?.(error));
  for (const listener of s.listeners) {
    try {
      listener(change);
    } catch (error) {
      s.options.onError?.(error);
    }
  }
}

/** The agent id `who` names in the team (an id or a member's name); undefined when nobody. */
export async function memberId(s: BoardState, teamId: string, who: string): Promise<string | undefined> {
  const members = await s.directory.members(teamId);
  return (members.find((m) => m.id === who) ?? members.find((m) => m.name === who))?.id;
}
