// `job_list`, `job_output`, `job_kill`: the agent's background jobs (started by bash with
// run_in_background). Jobs live in the sandbox, so they outlive a control-plane restart.

import * as v from 'valibot';
import { backstopTimeout, defineTool } from '../define.ts';
import { toWhole } from '../whole-number.ts';
import { LIMITS, sandboxOf } from './services.ts';

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

/** Bytes of output job_output shows at once (LIMITS.bashOutput characters of ASCII). */
const OUTPUT_BYTES = LIMITS.bashOutput;

/** Cuts `text` (read from byte `offset`) to OUTPUT_BYTES at a character boundary: the shown text and the offset after it. */
const headOf = (text: string, offset: number): { shown: string; next: number } => {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= OUTPUT_BYTES) return { shown: text, next: offset + bytes.length };
  let end = OUTPUT_BYTES;
  while (end > 0 && ((bytes[end] as number) & 0xc0) === 0x80) end--;
  return { shown: bytes.subarray(0, end).toString('utf8'), next: offset + end };
};

/** The longest wait job_output takes. */
const MAX_WAIT_MS = 600_000;

export const jobOutputTool = defineTool({
  name: 'job_output',
  description: `Read the output of a background job. Without offset it shows the newest output (the last ${OUTPUT_BYTES} bytes); with offset, ${OUTPUT_BYTES} bytes from that byte offset, to page through older output. Each answer says which bytes it shows and the offset to read on. With wait, block until the job ends or timeout_ms passes (default 30000).`,
  parameters: v.object({
    job_id: v.pipe(v.string(), v.minLength(1), v.description('The id bash returned')),
    wait: v.optional(v.pipe(v.boolean(), v.description('Wait for the job to end'))),
    timeout_ms: v.optional(
      v.pipe(
        v.number(),
        toWhole,
        v.minValue(0),
        v.maxValue(MAX_WAIT_MS),
        v.description('How long to wait, in ms'),
      ),
    ),
    offset: v.optional(
      v.pipe(
        v.number(),
        v.integer(),
        v.minValue(0),
        v.description('Byte offset of the output to read from (default: show the newest output)'),
      ),
    ),
  }),
  output: {
    schema: v.object({
      ...Job.entries,
      output: v.string(),
      /** Byte offset where `output` starts. */
      offset: v.number(),
      /** Byte offset just past `output`: where to read on. */
      nextOffset: v.number(),
      /** Output after nextOffset was already written (a page that did not reach the end). */
      more: v.boolean(),
    }),
    render: (_args, value) => {
      const { output, offset, nextOffset, more } = value;
      const earlier = offset > 0 ? `; earlier output: offset ${Math.max(0, offset - OUTPUT_BYTES)}` : '';
      const range =
        nextOffset === 0
          ? '[no output yet]'
          : offset === 0 && !more
            ? `[all ${nextOffset} bytes of output]`
            : `[output bytes ${offset}-${nextOffset}${more ? `; read on: offset ${nextOffset}` : ', the newest'}${earlier}]`;
      return [{ type: 'text', text: `${describeJob(value)}\n${range}${output ? `\n${output}` : ''}` }];
    },
  },
  // A wait the sandbox never ends still ends the call (TOOL_TIMEOUT, by the timeout policy).
  timeoutMs: backstopTimeout(MAX_WAIT_MS),
  isConcurrencySafe: () => true,
  isReadOnly: () => true,
  async execute(args, exec) {
    const sandbox = await sandboxOf(exec);
    const base = { wait: args.wait, timeoutMs: args.timeout_ms, signal: exec.signal };
    const read = await sandbox.jobs.output(
      args.job_id,
      args.offset === undefined ? { ...base, tail: OUTPUT_BYTES } : { ...base, offset: args.offset },
    );
    const { truncated, ...job } = read;
    if (args.offset === undefined) return { ...job, more: false };
    const { shown, next } = headOf(read.output, read.offset);
    return { ...job, output: shown, nextOffset: next, more: truncated || next < read.nextOffset };
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
