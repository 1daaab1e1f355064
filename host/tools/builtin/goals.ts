// The goal tools (seed 000): create_goal, get_goal and update_goal over the session's one current
// durable goal. Revisions are optimistic: update_goal names the revision it read, and a stale one
// is refused (REVISION_CONFLICT, the current revision in the error's data). A round is one call
// batch (one model step) the service ran for the agent while the goal was active; at
// max_goal_rounds the service blocks the goal. All three only touch session state (plan mode lets them run).
import * as v from 'valibot';
import { defineTool } from '../define.ts';
import type { ContentPart } from '../types.ts';
import { toWhole } from '../whole-number.ts';
import { GOAL_ACTIONS, Goal, sessionOf } from './session.ts';

const ROUNDS =
  'A round is one batch of tool calls (one model step) the service runs for this agent while the goal is active; when max_goal_rounds are used up the goal becomes blocked.';

const objective = v.pipe(
  v.string(),
  v.minLength(1),
  v.maxLength(4000),
  v.description('What done looks like'),
);
const maxRounds = v.pipe(
  v.number(),
  toWhole,
  v.minValue(1),
  v.maxValue(100_000),
  v.description('Most rounds to spend on the goal. Default: no limit'),
);

const describeGoal = (goal: Goal | null): ContentPart[] => {
  if (goal === null) return [{ type: 'text', text: 'There is no current goal.' }];
  const lines = [
    `Goal ${goal.goal_id} (revision ${goal.revision}): ${goal.state}`,
    `Objective: ${goal.objective}`,
    `Rounds used: ${goal.usage.rounds}${goal.max_goal_rounds === undefined ? '' : ` of ${goal.max_goal_rounds}`}`,
  ];
  if (goal.blocked_reason !== undefined) lines.push(`Blocked: ${goal.blocked_reason}`);
  return [{ type: 'text', text: lines.join('\n') }];
};

export const createGoalTool = defineTool({
  name: 'create_goal',
  description: `Create the current durable goal of this session (one at a time: complete the current one first). ${ROUNDS}`,
  parameters: v.object({ objective, max_goal_rounds: v.optional(maxRounds) }),
  output: { schema: Goal, render: (_args, goal) => describeGoal(goal) },
  isReadOnly: () => true,
  execute: (args, exec) => sessionOf(exec).createGoal(args.objective, args.max_goal_rounds),
});

export const getGoalTool = defineTool({
  name: 'get_goal',
  description: `Read the current goal: its state, revision and usage (rounds). ${ROUNDS}`,
  parameters: v.object({}),
  output: { schema: v.nullable(Goal), render: (_args, goal) => describeGoal(goal) },
  isConcurrencySafe: () => true,
  isReadOnly: () => true,
  execute: (_args, exec) => sessionOf(exec).goal(),
});

export const updateGoalTool = defineTool({
  name: 'update_goal',
  description:
    'Change the current goal using optimistic revision control: pass the revision you last read (a stale one is refused with the current revision). edit changes objective and/or max_goal_rounds; pause, resume, complete; blocked needs blocked_reason.',
  parameters: v.object({
    goal_id: v.pipe(v.string(), v.minLength(1), v.maxLength(64)),
    revision: v.pipe(v.number(), v.minValue(1), v.description('The revision you last read')),
    action: v.picklist(GOAL_ACTIONS),
    objective: v.optional(objective),
    max_goal_rounds: v.optional(maxRounds),
    blocked_reason: v.optional(
      v.pipe(v.string(), v.minLength(1), v.maxLength(2000), v.description('Required with action blocked')),
    ),
  }),
  output: { schema: Goal, render: (_args, goal) => describeGoal(goal) },
  isReadOnly: () => true,
  execute: (args, exec) => sessionOf(exec).updateGoal(args),
});
