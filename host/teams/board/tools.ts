// The four task-board tools of the Agent Teams composition (seed 000): team_task_create, _get,
// _list and _update, exactly as typed there. Offered only to agents whose services carry a board
// (created with `teams: true`), so they are registered with a condition. Each answers with short
// text the model reads and the task (or page) as the structured value. They change no file,
// process or client state, so plan mode lets them run.
import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import { defineTool } from '../../tools/define.ts';
import { type Disposer, disposer } from '../../tools/disposer.ts';
import type { ToolScope } from '../../tools/registry.ts';
import type { ContentPart, ExecContext } from '../../tools/types.ts';
import type { AgentBoard } from './board.ts';
import { TASK_ACTIONS, TASK_STATUSES, type TaskView } from './types.ts';

declare module '../../tools/types.ts' {
  interface ToolServices {
    /** The agent's team task board; present only for agents created with `teams: true`. */
    teamBoard?: AgentBoard;
  }
}

const boardOf = (exec: ExecContext): AgentBoard => {
  const board = exec.agent.services.teamBoard as AgentBoard | undefined;
  if (board === undefined)
    throw new SandboxError('NOT_FOUND', 'This agent has no team task board; create it with teams: true.');
  return board;
};

const READY =
  'A task is ready when it is pending and every task in its blocked_by is completed (a pending task reserved for a teammate by reassign is ready for that teammate only).';
const SCOPES =
  'write_scopes are paths relative to the workspace, or globs (`*` within a name, `**` any depth): "src/parser" covers everything below it, "docs/**/*.md" the files it matches. Only the team lead sets them. While an agent holds (in_progress) tasks with write scopes, its write, edit and str_replace_editor calls (inside run_code programs too) may only change files in the union of those scopes; others are refused with code WRITE_SCOPE. A teammate that has held a scoped task stays confined to what the lead gave it (its first scoped task, plus the scopes of tasks the lead later reassigns to it or edits) after release or completion, and so do the child agents it starts. bash, jobs, terminals and remote, MCP or plugin tools are NOT confined: a shell can write anywhere.';

const id = v.pipe(v.string(), v.minLength(1), v.maxLength(32), v.description('The task id, e.g. "3"'));
const ids = (what: string) =>
  v.pipe(
    v.array(v.pipe(v.string(), v.minLength(1), v.maxLength(32))),
    v.maxLength(1000),
    v.description(what),
  );
const scopes = v.pipe(
  v.array(v.pipe(v.string(), v.maxLength(4096))),
  v.maxLength(1000),
  v.description('Paths or globs relative to the workspace its owner may write (see the tool description)'),
);
const subject = v.pipe(v.string(), v.minLength(1), v.maxLength(100_000), v.description('A short title'));
const description = v.pipe(
  v.string(),
  v.minLength(1),
  v.maxLength(1_000_000),
  v.description('What to do and what done looks like'),
);

const TaskShape = v.object({
  task_id: v.string(),
  subject: v.string(),
  description: v.string(),
  status: v.picklist(TASK_STATUSES),
  owner: v.nullable(v.string()),
  blocked_by: v.array(v.string()),
  open_blockers: v.array(v.string()),
  ready: v.boolean(),
  write_scopes: v.array(v.string()),
  revision: v.number(),
  created_by: v.string(),
  created_at: v.string(),
  updated_at: v.string(),
  deleted: v.optional(v.literal(true)),
});

/** One line: `#3 [pending, ready] Subject — owner x; blocked by 1, 2 (open: 2); scopes src/**; rev 4`. */
const lineOf = (t: TaskView): string => {
  const state = t.status === 'pending' ? `pending, ${t.ready ? 'ready' : 'not ready'}` : t.status;
  const parts = [
    t.owner === null ? 'unowned' : `owner ${t.owner}`,
    ...(t.blocked_by.length === 0
      ? []
      : [
          `blocked by ${t.blocked_by.join(', ')}${t.open_blockers.length === 0 ? '' : ` (open: ${t.open_blockers.join(', ')})`}`,
        ]),
    ...(t.write_scopes.length === 0 ? [] : [`scopes ${t.write_scopes.join(', ')}`]),
    `rev ${t.revision}`,
  ];
  return `#${t.task_id} [${state}] ${t.subject} — ${parts.join('; ')}`;
};

const taskText = (t: TaskView, verb?: string): ContentPart[] => [
  {
    type: 'text',
    text: `${verb === undefined ? '' : `${verb} `}${lineOf(t)}${verb === undefined ? `\n${t.description}` : ''}`,
  },
];

export const teamTaskCreateTool = defineTool({
  name: 'team_task_create',
  description: `Create a task on your team's board: pending, unowned, revision 1. blocked_by lists task ids of this board that must be completed first. ${READY} ${SCOPES}`,
  parameters: v.object({
    subject,
    description,
    blocked_by: v.optional(ids('Ids of tasks of this board that must be completed first')),
    write_scopes: v.optional(scopes),
  }),
  output: { schema: TaskShape, render: (_args, task) => taskText(task, 'Created') },
  isReadOnly: () => true,
  execute: (args, exec) => boardOf(exec).create(args),
});

export const teamTaskGetTool = defineTool({
  name: 'team_task_get',
  description: `Read one task of your team's board: status, owner, dependencies, readiness, write scopes and the revision team_task_update needs. ${READY}`,
  parameters: v.object({ task_id: id }),
  output: { schema: TaskShape, render: (_args, task) => taskText(task) },
  isConcurrencySafe: () => true,
  isReadOnly: () => true,
  execute: (args, exec) => boardOf(exec).get(args.task_id),
});

export const teamTaskListTool = defineTool({
  name: 'team_task_list',
  description: `List your team's board in id order, filtered by status, owner (agent id or teammate name) and ready. ${READY} Pages hold \`limit\` tasks (default 50, at most 100); pass next_cursor as cursor for the next page.`,
  parameters: v.object({
    status: v.optional(v.picklist(TASK_STATUSES)),
    owner: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(200))),
    ready: v.optional(v.boolean()),
    cursor: v.optional(
      v.pipe(v.number(), v.integer(), v.minValue(0), v.description('next_cursor of the previous page')),
    ),
    limit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1000))),
  }),
  output: {
    schema: v.object({ tasks: v.array(TaskShape), next_cursor: v.nullable(v.number()), total: v.number() }),
    render: (_args, page) => [
      {
        type: 'text',
        text: [
          page.total === 0 ? 'No tasks match.' : `${page.total} task${page.total === 1 ? '' : 's'} match:`,
          ...page.tasks.map(lineOf),
          ...(page.next_cursor === null ? [] : [`More: call again with cursor ${page.next_cursor}.`]),
        ].join('\n'),
      },
    ],
  },
  isConcurrencySafe: () => true,
  isReadOnly: () => true,
  execute: (args, exec) => boardOf(exec).list(args),
});

const DONE: Record<(typeof TASK_ACTIONS)[number], string> = {
  claim: 'Claimed',
  release: 'Released',
  edit: 'Edited',
  set_dependencies: 'Set the dependencies of',
  complete: 'Completed',
  reopen: 'Reopened',
  reassign: 'Reassigned',
  delete: 'Deleted',
};

export const teamTaskUpdateTool = defineTool({
  name: 'team_task_update',
  description:
    "Change a task of your team's board. expected_revision is the revision you last read; a stale one is refused (REVISION_CONFLICT, with the current revision). " +
    'claim: a ready task that is unowned or reserved for you becomes in_progress and yours. ' +
    "release: your in_progress task (the lead: anyone's) goes back to pending, unowned. " +
    'complete: your in_progress task becomes completed; tasks blocked by it may become ready. ' +
    'reopen: a completed task goes back to pending, unowned. ' +
    'edit (subject, description, write_scopes), set_dependencies (blocked_by; pending tasks; cycles are refused with DEPENDENCY_CYCLE), ' +
    "reassign (owner: a teammate's agent id or name; pending or in_progress) and delete: anyone while the task is unowned, otherwise its owner or the team lead. " +
    `delete refuses a task others are blocked by (TASK_HAS_DEPENDENTS): change their dependencies first. ${READY} ${SCOPES}`,
  parameters: v.object({
    task_id: id,
    expected_revision: v.pipe(
      v.number(),
      v.integer(),
      v.minValue(1),
      v.description('The revision you last read'),
    ),
    action: v.picklist(TASK_ACTIONS),
    subject: v.optional(subject),
    description: v.optional(description),
    blocked_by: v.optional(ids('set_dependencies: the complete new list (empty removes all)')),
    write_scopes: v.optional(scopes),
    owner: v.optional(
      v.pipe(
        v.string(),
        v.minLength(1),
        v.maxLength(200),
        v.description('reassign: the teammate to hold it'),
      ),
    ),
  }),
  output: {
    schema: TaskShape,
    render: (args, task) => taskText(task, DONE[args.action]),
  },
  isReadOnly: () => true,
  execute: (args, exec) => boardOf(exec).update(args),
});

export const teamTaskTools = () => [
  teamTaskCreateTool,
  teamTaskGetTool,
  teamTaskListTool,
  teamTaskUpdateTool,
];

/** Registers the board tools in `scope`, offered only to agents that have a board (`teams: true`). */
export const registerTeamTaskTools = (scope: ToolScope): Disposer => {
  const when = ({ agent }: { agent: { services: { teamBoard?: unknown } } }) =>
    agent.services.teamBoard !== undefined;
  const disposers = teamTaskTools().map((tool) => scope.register(tool, { when }));
  return disposer(() => {
    for (const dispose of disposers) dispose();
  });
};
