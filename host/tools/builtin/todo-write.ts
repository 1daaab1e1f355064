// `todo_write`: replaces the session's whole task list (seed 000: never a partial update). The list
// is durable session state, readable at GET /v1/agents/:id/todos and announced on the session's
// event stream (`session.todos`). Read-only for plan mode: it changes nothing but session state.
import * as v from 'valibot';
import { defineTool } from '../define.ts';
import { sessionOf, TODO_LIMIT, Todo } from './session.ts';

const MARK = { pending: '[ ]', in_progress: '[~]', completed: '[x]' } as const;

export const todoWriteTool = defineTool({
  name: 'todo_write',
  description:
    "Replace the current session's complete task list. Send every task each time (this is not a partial update); keep at most one in_progress.",
  parameters: v.object({
    todos: v.pipe(
      v.array(Todo),
      v.maxLength(TODO_LIMIT),
      v.description('The whole list, in order; an empty list clears it'),
    ),
  }),
  output: {
    schema: v.object({ todos: v.array(Todo) }),
    render: (_args, { todos }) => [
      {
        type: 'text',
        text:
          todos.length === 0
            ? 'The task list is empty.'
            : todos.map((todo) => `${MARK[todo.status]} ${todo.content}`).join('\n'),
      },
    ],
  },
  isReadOnly: () => true,
  execute: async (args, exec) => ({ todos: await sessionOf(exec).writeTodos(args.todos) }),
});
