// `bash`: a one-shot Bash command in the agent's sandbox (seed 000, standard preset), or a
// background job with run_in_background. Exclusive: a command may mutate anything.

import * as v from 'valibot';
import { backstopTimeout, defineTool } from '../define.ts';
import { toWhole } from '../whole-number.ts';
import { capText, LIMITS, sandboxOf } from './services.ts';

const DEFAULT_TIMEOUT_MS = 120_000;
const MAX_TIMEOUT_MS = 600_000;

const Output = v.union([
  v.object({
    stdout: v.string(),
    stderr: v.string(),
    exitCode: v.nullable(v.number()),
    timedOut: v.boolean(),
    truncated: v.boolean(),
  }),
  v.object({ jobId: v.string(), status: v.string() }),
]);

export const bashTool = defineTool({
  name: 'bash',
  description:
    'Run a one-shot Bash command in the sandbox and return its output. Each call starts a fresh shell in `workdir` (default: the workspace). Use run_in_background for servers and long jobs, then job_output / job_kill with the returned job id.',
  parameters: v.object({
    command: v.pipe(v.string(), v.minLength(1), v.description('The command to run')),
    description: v.pipe(v.string(), v.description('What the command does, in a few words')),
    timeoutMs: v.optional(
      v.pipe(
        v.number(),
        toWhole,
        v.minValue(1),
        v.maxValue(MAX_TIMEOUT_MS),
        v.description(
          `Kill the command after this many ms (default ${DEFAULT_TIMEOUT_MS}, max ${MAX_TIMEOUT_MS})`,
        ),
      ),
    ),
    workdir: v.optional(v.pipe(v.string(), v.description('Working directory (default: the workspace)'))),
    run_in_background: v.optional(
      v.pipe(v.boolean(), v.description('Start as a background job and return its id')),
    ),
  }),
  // A sandbox that never answers still ends the call (TOOL_TIMEOUT, by the timeout policy).
  timeoutMs: backstopTimeout(MAX_TIMEOUT_MS),
  output: {
    schema: Output,
    render: (_args, value) => {
      if ('jobId' in value)
        return [
          {
            type: 'text',
            text: `Started background job ${value.jobId}. Read its output with job_output, stop it with job_kill.`,
          },
        ];
      const parts: string[] = [];
      if (value.stdout) parts.push(value.stdout.replace(/\n$/, ''));
      if (value.stderr) parts.push(value.stderr.replace(/\n$/, ''));
      if (value.timedOut) parts.push('[command timed out and was killed]');
      else if (value.exitCode !== 0) parts.push(`Exit code: ${value.exitCode ?? 'killed by a signal'}`);
      if (value.truncated) parts.push('[output was cut at the sandbox output limit]');
      return [{ type: 'text', text: capText(parts.join('\n') || '(no output)', LIMITS.bashOutput) }];
    },
  },
  async execute(args, exec) {
    const sandbox = await sandboxOf(exec);
    if (args.run_in_background) {
      const job = await sandbox.jobs.start(args.command, { cwd: args.workdir });
      return { jobId: job.id, status: job.status };
    }
    const result = await sandbox.exec(args.command, {
      cwd: args.workdir,
      timeoutMs: args.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      signal: exec.signal,
    });
    return {
      stdout: result.stdout,
      stderr: result.stderr,
      exitCode: result.exitCode,
      timedOut: result.timedOut,
      truncated: result.truncated,
    };
  },
});
