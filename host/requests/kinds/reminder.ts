// `reminder`: a schedule the agent made (schedule_create) is due. The service makes the request
// when the schedule fires, beside a `schedule.fired` session event; nobody in the service waits
// on it: the client runs the reminder's prompt (a new turn of its model loop) and answers to mark
// it handled, with `{ result }` (anything, e.g. what the turn did) or `{ error }`. An unanswered
// reminder expires like every request; a recurring schedule makes a new one each time it fires.
import * as v from 'valibot';
import { ErrorAnswer, ResultAnswer } from '../answers.ts';
import { defineRequestKind } from '../kind.ts';

export const reminderKind = defineRequestKind({
  name: 'reminder',
  payload: v.object({
    scheduleId: v.string(),
    /** What the agent asked to be reminded of, as it wrote it. */
    prompt: v.string(),
    /** When it was due (epoch ms); it may fire later, after a control-plane restart. */
    dueAt: v.number(),
    /** When it fired (epoch ms). */
    firedAt: v.number(),
    /** The period of a recurring schedule in seconds; absent for one that fires once. */
    everySeconds: v.optional(v.number()),
  }),
  answers: [ResultAnswer, ErrorAnswer],
  wrongAnswer: 'Answer a reminder with { "result": … } once its prompt is handled, or { "error": … }.',
  // Nobody waits on a reminder: what the client answered stays on the request and in the log.
  settle: (settlement) => settlement.state,
});
