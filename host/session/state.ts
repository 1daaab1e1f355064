// One agent's session service (the SessionService port of host/tools/builtin/session.ts): its
// todos, goal and plan mode kept in store.sessionState and announced on its session log
// (`session.todos`, `session.goal`, `session.plan_mode`, log-only), and its questions to the client
// as host requests (`user_question`, `plan_review`). Invariants: every change is logged before it is
// stored, so a log its tenant's budget refuses leaves the state as it was; the state is read once per
// process and written through (an agent's calls run in one process); plan mode starts as the agent's
// policy says (`policy.planMode`) until the client or an approved plan sets it.
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
  /** Turns plan mode on or off (PUT /plan-mode); returns the new state. */
  setPlanMode(on: boolean, by: PlanModeCause): boolean;
  /** A call batch starts: counts a round of the active goal (goal.ts says when that blocks it). */
  startRound(): void;
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

export function createAgentSession(options: AgentSessionOptions): AgentSession {
  const { sessionId, store, events, requests } = options;
  let state: { todos: Todo[]; planMode: boolean; goal: Goal | null } | undefined;

  function current() {
    if (state === undefined) {
      const stored = store.get(sessionId);
      state = {
        todos: (stored.todos as Todo[] | undefined) ?? [],
        planMode: stored.planMode ?? options.planModeAtStart,
        goal: (stored.goal as Goal | null | undefined) ?? null,
      };
    }
    return state;
  }

  function announce(type: string, data: JsonValue): void {
    // Not awaited (these methods are synchronous): a change its tenant's full log refuses to
    // announce is made all the same, as a tool's own effects are; the call that made it is logged.
    events.append([{ sessionId, type, surface: 'log-only', data }]).catch(() => undefined);
  }

  function saveGoal(goal: Goal, logged: boolean): Goal {
    if (logged) announce('session.goal', { goal } as unknown as JsonValue);
    store.set(sessionId, { goal: goal as unknown as JsonValue });
    current().goal = goal;
    return goal;
  }

  const at = () => new Date(options.now()).toISOString();

  function setPlanMode(on: boolean, by: PlanModeCause): boolean {
    if (current().planMode === on) return on;
    announce('session.plan_mode', { on, by });
    store.set(sessionId, { planMode: on });
    current().planMode = on;
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
    todos: () => current().todos,
    writeTodos(todos) {
      const list = todos.map(({ content, status }) => ({ content, status }));
      announce('session.todos', { todos: list });
      store.set(sessionId, { todos: list });
      current().todos = list;
      return list;
    },
    goal: () => current().goal,
    createGoal(objective, maxGoalRounds) {
      checkReplaceable(current().goal);
      return saveGoal(newGoal(objective, maxGoalRounds, at()), true);
    },
    updateGoal: (update: GoalUpdate) => saveGoal(applyUpdate(current().goal, update, at()), true),
    planMode: () => current().planMode,
    setPlanMode,
    startRound() {
      const round = startRound(current().goal, at());
      if (round !== undefined) saveGoal(round.goal, round.changed);
    },
    async submitPlan(plan, call): Promise<PlanReview> {
      if (!current().planMode)
        throw new SandboxError(
          'CONFLICT',
          'Plan mode is off for this agent, so there is no plan to submit; go on with the task.',
        );
      const review = await ask(planReviewKind, { plan }, call);
      if (review.approved) setPlanMode(false, 'plan_approved');
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
