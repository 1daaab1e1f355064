// The goal's rules, as pure functions over seed 000's goal: creation, update_goal's actions with
// optimistic revision control, and the round count. Invariants: every change the model or the
// service makes raises the revision by one (counting a round does not, or no revision would stay
// current for a whole step); a completed goal never changes again; `blocked` always has a reason.
import { nanoid } from 'nanoid';
import { SandboxError } from '../errors.ts';
import type { Goal, GoalUpdate } from '../tools/builtin/index.ts';

export const newGoal = (objective: string, maxGoalRounds: number | undefined, at: string): Goal => ({
  goal_id: `goal_${nanoid(12)}`,
  objective,
  state: 'active',
  revision: 1,
  ...(maxGoalRounds === undefined ? {} : { max_goal_rounds: maxGoalRounds }),
  usage: { rounds: 0 },
  created_at: at,
  updated_at: at,
});

/** create_goal over the current goal: only a completed one (or none) may be replaced. */
export const checkReplaceable = (current: Goal | null): void => {
  if (current === null || current.state === 'completed') return;
  throw new SandboxError(
    'CONFLICT',
    `Goal ${current.goal_id} is still ${current.state}; finish it with update_goal (action complete) before creating another.`,
    { data: { goal_id: current.goal_id, currentRevision: current.revision } },
  );
};

const conflict = (goal: Goal, message: string): SandboxError =>
  new SandboxError('CONFLICT', message, {
    data: { goal_id: goal.goal_id, state: goal.state, currentRevision: goal.revision },
  });

/** update_goal: the goal after `update`, or a SandboxError saying what to do instead. */
export const applyUpdate = (current: Goal | null, update: GoalUpdate, at: string): Goal => {
  if (update.action === 'blocked' && update.blocked_reason === undefined)
    throw new SandboxError(
      'INVALID_ARGUMENTS',
      'Action blocked needs blocked_reason: say what blocks the goal.',
    );
  if (update.action === 'edit' && update.objective === undefined && update.max_goal_rounds === undefined)
    throw new SandboxError('INVALID_ARGUMENTS', 'Action edit needs objective, max_goal_rounds or both.');
  if (current === null || current.goal_id !== update.goal_id)
    throw new SandboxError(
      'NOT_FOUND',
      current === null
        ? `There is no goal ${update.goal_id}; create one with create_goal.`
        : `Goal ${update.goal_id} is not the current goal; the current one is ${current.goal_id} (read it with get_goal).`,
    );
  if (update.revision !== current.revision)
    throw new SandboxError(
      'REVISION_CONFLICT',
      `Revision ${update.revision} of goal ${current.goal_id} is stale; the current revision is ${current.revision}. Read the goal with get_goal and decide again.`,
      { data: { goal_id: current.goal_id, currentRevision: current.revision } },
    );
  if (current.state === 'completed')
    throw conflict(current, `Goal ${current.goal_id} is completed; create a new goal with create_goal.`);
  const next: Goal = {
    ...current,
    usage: { ...current.usage },
    revision: current.revision + 1,
    updated_at: at,
  };
  switch (update.action) {
    case 'edit':
      if (update.objective !== undefined) next.objective = update.objective;
      if (update.max_goal_rounds !== undefined) next.max_goal_rounds = update.max_goal_rounds;
      return next;
    case 'pause':
      if (current.state !== 'active')
        throw conflict(
          current,
          `Goal ${current.goal_id} is ${current.state}; only an active goal can be paused.`,
        );
      next.state = 'paused';
      return next;
    case 'resume':
      if (current.state === 'active') throw conflict(current, `Goal ${current.goal_id} is already active.`);
      if (exhausted(current))
        throw conflict(
          current,
          `Goal ${current.goal_id} has used its ${current.max_goal_rounds} rounds; raise max_goal_rounds (action edit) before resuming it.`,
        );
      next.state = 'active';
      delete next.blocked_reason;
      return next;
    case 'complete':
      next.state = 'completed';
      delete next.blocked_reason;
      return next;
    case 'blocked':
      next.state = 'blocked';
      next.blocked_reason = update.blocked_reason as string;
      return next;
  }
};

const exhausted = (goal: Goal): boolean =>
  goal.max_goal_rounds !== undefined && goal.usage.rounds >= goal.max_goal_rounds;

/**
 * A round starts (one call batch while the goal is active): the goal with one more round, or
 * blocked (a new revision) when its max_goal_rounds are already used up. Undefined: nothing changes.
 */
export const startRound = (goal: Goal | null, at: string): { goal: Goal; changed: boolean } | undefined => {
  if (goal === null || goal.state !== 'active') return undefined;
  if (!exhausted(goal))
    return { goal: { ...goal, usage: { rounds: goal.usage.rounds + 1 } }, changed: false };
  return {
    goal: {
      ...goal,
      state: 'blocked',
      blocked_reason: `It used all ${goal.max_goal_rounds} of its max_goal_rounds; raise max_goal_rounds (action edit) and resume it, or complete it.`,
      revision: goal.revision + 1,
      updated_at: at,
    },
    changed: true,
  };
};
