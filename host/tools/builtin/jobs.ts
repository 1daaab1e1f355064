// `job_list`, `job_output`, `job_kill`: the agent's background jobs (started by bash with
// run_in_background). Jobs live in the sandbox, so they outlive a control-plane restart.

import * as v from 'valibot';
import { defineTool } from '../define.ts';
import { capText, LIMITS, sandboxOf } from './services.ts';

const Job = v.object({
  id: v.string(),
  command: v.string(),
  cwd: v.string(),
  status: v.picklist(['running', 'exited', 'killed']),
  exitCode: v.nullable(v.number()),
  startedAt: v.number(),
  endedAt: v.nullable(v.number()),
});

const describeJob = (job: v.InferOutput<typeof Job>): string =>
  `${job.id}  ${job.status}${job.exitCode === null ? '' : ` (exit ${job.exitCode})`}  ${job.command}`;

export const jobListTool = defineTool({
  name: 'job_list',
  description: 'List the background jobs of this agent with their status.',
  parameters: v.object({}),
  output: {
    schema: v.array(Job),
    render: (_args, value) => [
      { type: 'text', text: value.length === 0 ? 'No background jobs' : value.map(describeJob).join('\n') },
    ],
  },
  isConcurrencySafe: () => true,
  isReadOnly: () => true,
  async execute(_args, exec) {
    return (await sandboxOf(exec)).jobs.list();
  },
});

export const jobOutputTool = defineTool({
  name: 'job_output',
  description:
    'Read the output of a background job. With wait, block until the job ends or timeout_ms passes (default 30000).',
  parameters: v.object({
    job_id: v.pipe(v.string(), v.minLength(1), v.description('The id bash returned')),
    wait: v.optional(v.pipe(v.boolean(), v.description('Wait for the job to end'))),
    timeout_ms: v.optional(
      v.pipe(
        v.number(),
        v.integer(),
        v.minValue(0),
        v.maxValue(600_000),
        v.description('How long to wait, in ms'),
      ),
    ),
  }),
  output: {
    schema: v.object({ ...Job.entries, output: v.string(), nextOffset: v.number(), truncated: v.boolean() }),
    render: (_args, value) => [
      {
        type: 'text',
        text: `${describeJob(value)}\n${capText(value.output, LIMITS.bashOutput) || '(no output yet)'}`,
      },
    ],
  },
  isConcurrencySafe: () => true,
  isReadOnly: () => true,
  async execute(args, exec) {
    const sandbox = await sandboxOf(exec);
    return sandbox.jobs.output(args.job_id, {
      wait: args.wait,
      timeoutMs: args.timeout_ms,
      signal: exec.signal,
    });
  },
});

export const jobKillTool = defineTool({
  name: 'job_kill',
  description: 'Stop a background job (its whole process group).',
  parameters: v.object({
    job_id: v.pipe(v.string(), v.minLength(1), v.description('The id bash returned')),
    reason: v.optional(v.pipe(v.string(), v.description('Why it is stopped, for the log'))),
  }),
  output: {
    schema: Job,
    render: (_args, value) => [{ type: 'text', text: `Stopped ${describeJob(value)}` }],
  },
  async execute(args, exec) {
    return (await sandboxOf(exec)).jobs.kill(args.job_id);
  },
});
