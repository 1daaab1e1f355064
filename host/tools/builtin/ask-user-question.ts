// `ask_user_question`: structured questions (seed 000's Question) for a person, asked as a
// `user_question` host request; the call waits for the answer and returns it. Expiry and
// cancellation are an approval's: the request expires at the service's TTL (REQUEST_EXPIRED) and is
// cancelled with the call.
import * as v from 'valibot';
import { Question } from '../../requests/index.ts';
import { defineTool } from '../define.ts';
import { sessionOf } from './session.ts';

export const askUserQuestionTool = defineTool({
  name: 'ask_user_question',
  description:
    'Ask a person structured questions and wait for the answers. Give options when there are clear choices (the person picks one, or several with multi_select); without options the answer is free text.',
  parameters: v.object({
    questions: v.pipe(v.array(Question), v.minLength(1), v.maxLength(10)),
  }),
  output: {
    schema: v.object({
      answers: v.array(v.object({ id: v.string(), question: v.string(), answer: v.array(v.string()) })),
    }),
    render: (_args, { answers }) => [
      {
        type: 'text',
        text: answers
          .map(
            ({ question, answer }) =>
              `${question}\n→ ${answer.length === 0 ? '(no answer)' : answer.join(', ')}`,
          )
          .join('\n\n'),
      },
    ],
  },
  isReadOnly: () => true,
  execute: (args, exec) => sessionOf(exec).ask(args.questions, exec),
});
