// `user_question`: ask_user_question's structured questions (seed 000's Question shape), answered by
// a person through the client with `{ answers: { <question id>: "label" | ["label", …] } }`.
// Invariants, as for approvals: the request expires at its TTL and is cancelled with its call; an
// unanswered request fails the call (REQUEST_EXPIRED), a cancelled one ABORTED, and an answer is
// never dropped: every asked question comes back, unanswered ones with an empty list.
import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import { defineRequestKind } from '../kind.ts';

const text = (max: number, what: string) =>
  v.pipe(v.string(), v.minLength(1), v.maxLength(max), v.description(what));

/** One choice of a question. */
export const QuestionOption = v.object({
  label: text(200, 'What the person picks (and what comes back as the answer)'),
  description: v.optional(v.pipe(v.string(), v.maxLength(1000), v.description('What picking it means'))),
});

/** Seed 000's Question: free text when it has no options; one option unless multi_select. */
export const Question = v.object({
  id: text(200, 'Key of this question in the answers'),
  question: text(2000, 'The complete question'),
  header: v.optional(text(200, 'A short label for the question, e.g. "Database"')),
  options: v.optional(v.pipe(v.array(QuestionOption), v.maxLength(20))),
  multi_select: v.optional(
    v.pipe(v.boolean(), v.description('Several options may be picked. Default false')),
  ),
});
export type Question = v.InferOutput<typeof Question>;

/** The person's answers by question id: an option's label, several labels, or their own words. */
export const QuestionAnswer = v.strictObject({
  answers: v.record(
    v.pipe(v.string(), v.maxLength(200)),
    v.union([
      v.pipe(v.string(), v.maxLength(10_000)),
      v.pipe(v.array(v.pipe(v.string(), v.maxLength(10_000))), v.maxLength(20)),
    ]),
  ),
});

/** What the asking call returns: every question asked, in order, with what was answered. */
export interface QuestionAnswers {
  answers: { id: string; question: string; answer: string[] }[];
}

export const userQuestionKind = defineRequestKind({
  name: 'user_question',
  payload: v.object({ questions: v.pipe(v.array(Question), v.minLength(1), v.maxLength(10)) }),
  answers: [QuestionAnswer],
  wrongAnswer:
    'Answer a user_question with { "answers": { "<question id>": "<label or text>" | ["<label>", …] } }.',
  settle(settlement): QuestionAnswers {
    switch (settlement.state) {
      case 'answered': {
        const given = settlement.answer.answers;
        return {
          answers: settlement.payload.questions.map(({ id, question }) => {
            const answer = Object.hasOwn(given, id) ? given[id] : undefined;
            return {
              id,
              question,
              answer: answer === undefined ? [] : typeof answer === 'string' ? [answer] : [...answer],
            };
          }),
        };
      }
      case 'malformed':
        throw new SandboxError(
          'TOOL_FAILED',
          'The client answered the questions with something other than { answers }.',
        );
      case 'expired':
        throw new SandboxError(
          'REQUEST_EXPIRED',
          `Nobody answered the questions within ${settlement.ttlMs} ms; go on without the answers or ask again later.`,
        );
      case 'cancelled':
        throw new SandboxError('ABORTED', 'The questions were cancelled before anyone answered.');
    }
  },
});
