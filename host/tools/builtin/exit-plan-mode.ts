// `exit_plan_mode`: submits the complete plan for review as a `plan_review` host request; an
// approval ends plan mode, a refusal keeps it on and returns the reviewer's reason. Seed 000 keeps
// the tool in the catalog when plan mode is off (so the catalog does not change across
// transitions); a call then is refused with CONFLICT.
import * as v from 'valibot';
import { defineTool } from '../define.ts';
import { sessionOf } from './session.ts';

export const exitPlanModeTool = defineTool({
  name: 'exit_plan_mode',
  description:
    'Submit the complete plan for review while in plan mode. Approval ends plan mode (mutating tools work again); otherwise revise the plan from the feedback and submit again. Refused outside plan mode.',
  parameters: v.object({
    plan: v.pipe(v.string(), v.minLength(1), v.maxLength(100_000), v.description('The whole plan, Markdown')),
  }),
  output: {
    schema: v.variant('approved', [
      v.object({ approved: v.literal(true) }),
      v.object({ approved: v.literal(false), feedback: v.string() }),
    ]),
    render: (_args, review) => [
      {
        type: 'text',
        text: review.approved
          ? 'The plan was approved; plan mode is off. Carry it out.'
          : `The plan was not approved: ${review.feedback}. Plan mode stays on; revise the plan and submit it again.`,
      },
    ],
  },
  isReadOnly: () => true,
  execute: (args, exec) => sessionOf(exec).submitPlan(args.plan, exec),
});
