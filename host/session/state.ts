// One agent's session service (the SessionService port of host/tools/builtin/session.ts): its
// todos, goal and plan mode kept in store.sessionState and announced on its session log
// (`session.todos`, `session.goal`, `session.plan_mode`, log-only), and its questions to the client
// as host requests (`user_question`, `plan_review`). Invariants: every change is logged before it is
// stored, so a log its tenant's budget refuses leaves the state as it was; the state is read once per
// process, with one awaited read before the session exists (so its getters stay synchronous), and
// written through: a change is in memory only once the store took it (an agent's calls run in one
// process); plan mode starts as the agent's policy says (`policy.planMode`) until the client or an
// approved plan sets it.
import { SandboxError } from '../errors.ts';
import type { JsonValue } from '../json.ts';
import {
  awaitRequest,
  type PlanReview,
  planReviewKind,
  type Question,
  type QuestionAnswers,
  type RequestKind,
  type RequestStore,
  userQuestionKind,
} from '../requests/index.ts';
import type { SessionStateStore } from '../store/index.ts';
import type { EventLog } from '../store/types.ts';
import type { AskingCall, Goal, GoalUpdate, SessionService, Todo } from '../tools/builtin/index.ts';
import { applyUpdate, checkReplaceable, newGoal, startRound } from './goal.ts';

/** Who turned plan mode on or off, as the `session.plan_mode` event says. */
export type PlanModeCause = 'client' | 'plan_approved';

export interface AgentSession extends SessionService {
  /** Turns plan mode on or off (PUT /plan-mode); resolves with the new state once it is stored. */
  setPlanMode(on: boolean, by: PlanModeCause): Promise<boolean>;
  /** A call batch starts: counts a round of the active goal (goal.ts says when that blocks it). */
  startRound(): Promise<void>;
}

export interface AgentSessionOptions {
  sessionId: string;
  /** Plan mode before anything set it: the agent's policy at creation. */
  planModeAtStart: boolean;
  store: SessionStateStore;
  events: EventLog;
  requests: RequestStore;
  /** How long the client has to answer a question or review a plan. */
  ttlMs: number;
  now: () => number;
}

/** Reads the session's stored state (one awaited read), then makes its service over it. */
export async function createAgentSession(options: AgentSessionOptions): Promise<AgentSession> {
  const { sessionId, store, events, requests } = options;
  const stored = await store.get(sessionId);
  const state: { todos: Todo[]; planMode: boolean; goal: Goal | null } = {
    todos: (stored.todos as Todo[] | undefined) ?? [],
    planMode: stored.planMode ?? options.planModeAtStart,
    goal: (stored.goal as Goal | null | undefined) ?? null,
  };

  /** Logged before the change is stored: a change its tenant's full log refuses is not made. */
  async function announce(type: string, data: JsonValue): Promise<void> {
    await events.append([{ sessionId, type, surface: 'log-only', data }]);
  }

  async function saveGoal(goal: Goal, logged: boolean): Promise<Goal> {
    if (logged) await announce('session.goal', { goal } as unknown as JsonValue);
    await store.set(sessionId, { goal: goal as unknown as JsonValue });
    state.goal = goal;
    return goal;
  }

  const at = () => new Date(options.now()).toISOString();

  async function setPlanMode(on: boolean, by: PlanModeCause): Promise<boolean> {
    if (state.planMode === on) return on;
    await announce('session.plan_mode', { on, by });
    await store.set(sessionId, { planMode: on });
    state.planMode = on;
    return on;
  }

  function ask<P, A, O>(kind: RequestKind<P, A, O>, payload: P, call: AskingCall): Promise<O> {
    return awaitRequest(
      requests,
      kind,
      { sessionId, callId: call.callId, payload, ttlMs: options.ttlMs, now: options.now },
      call.signal,
    );
  }

  return {
    todos: () => state.todos,
    async writeTodos(todos) {
      const list = todos.map(({ content, status }) => ({ content, status }));
      await announce('session.todos', { todos: list });
      await store.set(sessionId, { todos: list });
      state.todos = list;
      return list;
    },
    goal: () => state.goal,
    async createGoal(objective, maxGoalRounds) {
      checkReplaceable(state.goal);
      return saveGoal(newGoal(objective, maxGoalRounds, at()), true);
    },
    updateGoal: async (update: GoalUpdate) => saveGoal(applyUpdate(state.goal, update, at()), true),
    planMode: () => state.planMode,
    setPlanMode,
    async startRound() {
      const round = startRound(state.goal, at());
      if (round !== undefined) await saveGoal(round.goal, round.changed);
    },
    async submitPlan(plan, call): Promise<PlanReview> {
      if (!state.planMode)
        throw new SandboxError(
          'CONFLICT',
          'Plan mode is off for this agent, so there is no plan to submit; go on with the task.',
        );
      const review = await ask(planReviewKind, { plan }, call);
      if (review.approved) await setPlanMode(false, 'plan_approved');
      return review;
    },
    ask(questions: readonly Question[], call): Promise<QuestionAnswers> {
      const ids = new Set(questions.map((q) => q.id));
      if (ids.size !== questions.length)
        throw new SandboxError('INVALID_ARGUMENTS', 'Each question needs its own id; two share one.');
      return ask(userQuestionKind, { questions: [...questions] }, call);
    },
  };
}
