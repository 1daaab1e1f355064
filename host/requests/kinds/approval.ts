// `approval`: a person allows or denies a call that policy answered with `ask` (the tools
// pipeline's Approvals port, host/tools/approvals.ts, goes through it). Invariant: fail closed:
// anything but an explicit `{ allow: true }` answered in time is a denial, never an error.
import * as v from 'valibot';
import { defineRequestKind, jsonValue } from '../kind.ts';

/** The person's decision; a denial's reason reaches the model. */
export const AllowAnswer = v.strictObject({
  allow: v.boolean(),
  reason: v.optional(v.pipe(v.string(), v.maxLength(2000))),
});

export type ApprovalDecision = { allow: true } | { allow: false; reason?: string };

export const approvalKind = defineRequestKind({
  name: 'approval',
  payload: v.object({
    toolName: v.string(),
    arguments: jsonValue,
    /** Why policy asks, shown to the person deciding. */
    reason: v.string(),
  }),
  answers: [AllowAnswer],
  wrongAnswer: 'Answer an approval with { "allow": true|false }.',
  settle(settlement): ApprovalDecision {
    switch (settlement.state) {
      case 'answered': {
        const { allow, reason } = settlement.answer;
        if (allow) return { allow: true };
        return reason === undefined ? { allow: false } : { allow: false, reason };
      }
      case 'malformed':
        return { allow: false, reason: 'the approval answer was malformed' };
      case 'expired':
        return { allow: false, reason: 'nobody answered the approval request in time' };
      case 'cancelled':
        return { allow: false, reason: 'the approval request was cancelled' };
    }
  },
});
