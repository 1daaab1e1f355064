// The session service the session tools use (todo_write, the goal tools, exit_plan_mode,
// ask_user_question), added to ToolServices by module augmentation like the sandbox: host/agents
// fills `session` with the agent's own, so host/tools never imports the implementation. The seed's
// nested shapes (Todo, the goal) are stated here once, for the tools, the API and the store's owner.
import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import type { PlanReview, Question, QuestionAnswers } from '../../requests/index.ts';
import type { ExecContext } from '../types.ts';

declare module '../types.ts' {
  interface ToolServices {
    session?: SessionService;
  }
}

/** Seed 000's Todo. */
export const Todo = v.object({
  content: v.pipe(v.string(), v.minLength(1), v.maxLength(2000), v.description('What to do, in a few words')),
  status: v.picklist(['pending', 'in_progress', 'completed']),
});
export type Todo = v.InferOutput<typeof Todo>;

export const TODO_LIMIT = 200;

export const GOAL_STATES = ['active', 'paused', 'blocked', 'completed'] as const;
export const GOAL_ACTIONS = ['edit', 'pause', 'resume', 'complete', 'blocked'] as const;
export type GoalAction = (typeof GOAL_ACTIONS)[number];

/** The current goal as get_goal, create_goal, update_goal and GET /goal return it. */
export const Goal = v.object({
  goal_id: v.string(),
  objective: v.string(),
  /** active: being worked on; paused / blocked: not now (blocked says why); completed: done. */
  state: v.picklist(GOAL_STATES),
  /** Starts at 1 and grows by one with every change; update_goal must name the current one. */
  revision: v.number(),
  max_goal_rounds: v.optional(v.number()),
  blocked_reason: v.optional(v.string()),
  /** rounds: the agent's call batches (model steps) the service ran while the goal was active. */
  usage: v.object({ rounds: v.number() }),
  created_at: v.string(),
  updated_at: v.string(),
});
export type Goal = v.InferOutput<typeof Goal>;

export interface GoalUpdate {
  goal_id: string;
  revision: number;
  action: GoalAction;
  objective?: string | undefined;
  max_goal_rounds?: number | undefined;
  blocked_reason?: string | undefined;
}

/** The call a request belongs to, and its cancellation. */
export interface AskingCall {
  callId: string;
  signal: AbortSignal;
}

/** One agent's session state and its questions to the client. Reads answer from memory; a write resolves once stored. */
export interface SessionService {
  todos(): Todo[];
  /** Replaces the whole list; announced as a `session.todos` event. */
  writeTodos(todos: readonly Todo[]): Promise<Todo[]>;
  goal(): Goal | null;
  /** CONFLICT while a goal that is not completed is current. */
  createGoal(objective: string, maxGoalRounds?: number): Promise<Goal>;
  /** NOT_FOUND for another goal id, REVISION_CONFLICT for a stale revision, CONFLICT for a move its state forbids. */
  updateGoal(update: GoalUpdate): Promise<Goal>;
  planMode(): boolean;
  /** Submits the plan as a `plan_review` request; approval ends plan mode. CONFLICT outside plan mode. */
  submitPlan(plan: string, call: AskingCall): Promise<PlanReview>;
  /** Asks as a `user_question` request and resolves with the answers. */
  ask(questions: readonly Question[], call: AskingCall): Promise<QuestionAnswers>;
}

export const sessionOf = (exec: ExecContext): SessionService => {
  const session = exec.agent.services.session;
  if (session === undefined)
    throw new SandboxError(
      'TOOL_FAILED',
      'This agent has no session state; run it through the agent service (POST /v1/agents/:id/calls).',
    );
  return session;
};
