// `plan_review`: exit_plan_mode's plan, shown to a person who approves it (plan mode ends) or sends
// it back with a reason. The answer is an approval's `{ allow, reason? }`. Invariant: fail closed
// like an approval: anything but an explicit `{ allow: true }` answered in time leaves plan mode on.
import * as v from 'valibot';
import { defineRequestKind } from '../kind.ts';
import { AllowAnswer } from './approval.ts';

/** The review: approved, or not with the reviewer's reason (or why nobody reviewed it). */
export type PlanReview = { approved: true } | { approved: false; feedback: string };

export const planReviewKind = defineRequestKind({
  name: 'plan_review',
  payload: v.object({ plan: v.string() }),
  answers: [AllowAnswer],
  wrongAnswer:
    'Answer a plan_review with { "allow": true } to approve the plan, or { "allow": false, "reason": "…" }.',
  settle(settlement): PlanReview {
    switch (settlement.state) {
      case 'answered': {
        const { allow, reason } = settlement.answer;
        return allow ? { approved: true } : { approved: false, feedback: reason ?? 'no reason given' };
      }
      case 'malformed':
        return { approved: false, feedback: 'the review answer was malformed' };
      case 'expired':
        return { approved: false, feedback: 'nobody reviewed the plan in time' };
      case 'cancelled':
        return { approved: false, feedback: 'the review was cancelled' };
    }
  },
});
