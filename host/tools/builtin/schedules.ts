// `schedule_create`, `schedule_list`, `schedule_delete` (seed 000): an agent's durable reminders.
// The tools only speak; the ScheduleService (host/schedules/scheduler.ts) validates times, keeps the
// schedules in the store and fires them (a `schedule.fired` session event and a `reminder` host
// request the client answers). A schedule belongs to the calling agent: nobody lists or deletes
// another agent's, and they are deleted with the agent. schedule_list only reads, so plan mode lets
// it run; create and delete change what will happen, so they wait for the plan.
import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import type { JsonValue } from '../../json.ts';
import { defineTool } from '../define.ts';
import type { ExecContext, ToolDefinition } from '../types.ts';

/** The calling agent, as the schedules know it. */
export interface ScheduleOwner {
  tenantId: string;
  agentId: string;
}

/** What schedule_create asks for: exactly one of the three times. */
export interface ScheduleRequest {
  prompt: string;
  after_seconds?: number;
  every_seconds?: number;
  at?: string | { date: string; time: string; time_zone: string };
}

/** A schedule as the tools and the API show it. */
export interface ScheduleView {
  id: string;
  prompt: string;
  kind: 'after' | 'every' | 'at';
  /** The time as it was asked for. */
  spec: JsonValue;
  /** When it fires next, ISO 8601 UTC. */
  next_at: string;
  every_seconds?: number;
  fired: number;
  created_at: string;
}

/** The port the schedule tools use; host/agents implements it. */
export interface ScheduleService {
  create(owner: ScheduleOwner, request: ScheduleRequest): Promise<ScheduleView>;
  list(owner: ScheduleOwner): Promise<ScheduleView[]>;
  /** False when the owner has no such schedule. */
  delete(owner: ScheduleOwner, id: string): Promise<boolean>;
}

const ScheduleAt = v.object({
  date: v.pipe(v.string(), v.maxLength(32), v.description('YYYY-MM-DD')),
  time: v.pipe(v.string(), v.maxLength(32), v.description('HH:MM:SS (24-hour) on that date')),
  time_zone: v.pipe(v.string(), v.maxLength(64), v.description('IANA time zone, e.g. "Asia/Shanghai"')),
});

/** A schedule as the tools and the API show it (the schema of ScheduleView). */
export const ScheduleShown = v.object({
  id: v.string(),
  prompt: v.string(),
  kind: v.picklist(['after', 'every', 'at']),
  spec: v.unknown(),
  next_at: v.string(),
  every_seconds: v.optional(v.number()),
  fired: v.number(),
  created_at: v.string(),
});

const describe = (s: v.InferOutput<typeof ScheduleShown>): string =>
  `${s.id}  next ${s.next_at}${s.every_seconds === undefined ? '' : `, every ${s.every_seconds} s`}  ${JSON.stringify(s.prompt.slice(0, 200))}`;

/** The calling agent; a tool body without a tenant (no agent service) cannot own schedules. */
export const ownerOf = (exec: ExecContext): ScheduleOwner => {
  const tenantId = exec.agent.services.tenantId;
  if (typeof tenantId !== 'string')
    throw new SandboxError(
      'SANDBOX_UNAVAILABLE',
      'Schedules need an agent created through the agent service.',
    );
  return { tenantId, agentId: exec.agent.id };
};

export const scheduleTools = (service: ScheduleService): ToolDefinition[] => [
  defineTool({
    name: 'schedule_create',
    description:
      'Create a reminder for this session: give the prompt and exactly one of after_seconds (once, that many seconds from now), every_seconds (repeatedly) or at (once, at an ISO 8601 time with an offset, or { date, time, time_zone }). When it is due, the client is asked to run the prompt. It survives restarts; it is deleted with the agent.',
    parameters: v.object({
      prompt: v.pipe(
        v.string(),
        v.minLength(1),
        v.maxLength(8000),
        v.description('What to do when it is due'),
      ),
      after_seconds: v.optional(v.pipe(v.number(), v.description('Fire once, this many seconds from now'))),
      every_seconds: v.optional(v.pipe(v.number(), v.description('Fire every this many seconds'))),
      at: v.optional(
        v.union([
          v.pipe(
            v.string(),
            v.maxLength(64),
            v.description('ISO 8601 with an offset, e.g. 2026-08-21T09:00:00+08:00'),
          ),
          ScheduleAt,
        ]),
      ),
    }),
    output: {
      schema: ScheduleShown,
      render: (_args, value) => [{ type: 'text', text: `Scheduled ${describe(value)}` }],
    },
    execute(args, exec) {
      const given = [args.after_seconds, args.every_seconds, args.at].filter((x) => x !== undefined).length;
      if (given !== 1)
        throw new SandboxError(
          'INVALID_ARGUMENTS',
          `Give exactly one of after_seconds, every_seconds or at (got ${given}).`,
        );
      return service.create(ownerOf(exec), args);
    },
  }),
  defineTool({
    name: 'schedule_list',
    description: "List this session's schedules with when each fires next.",
    parameters: v.object({}),
    output: {
      schema: v.array(ScheduleShown),
      render: (_args, value) => [
        { type: 'text', text: value.length === 0 ? 'No schedules' : value.map(describe).join('\n') },
      ],
    },
    isConcurrencySafe: () => true,
    isReadOnly: () => true,
    execute: (_args, exec) => service.list(ownerOf(exec)),
  }),
  defineTool({
    name: 'schedule_delete',
    description: "Delete one of this session's schedules by the id schedule_create or schedule_list gave.",
    parameters: v.object({ id: v.pipe(v.string(), v.minLength(1), v.maxLength(128)) }),
    output: {
      schema: v.object({ id: v.string(), deleted: v.literal(true) }),
      render: (args) => [{ type: 'text', text: `Deleted schedule ${args.id}` }],
    },
    async execute(args, exec) {
      if (!(await service.delete(ownerOf(exec), args.id)))
        throw new SandboxError(
          'NOT_FOUND',
          `This session has no schedule ${args.id}; schedule_list shows its schedules.`,
        );
      return { id: args.id, deleted: true as const };
    },
  }),
];
