// The two inner steps a workflow script makes, as tool definitions that are never registered: the
// runner passes them to exec.callTool so that every step goes through the one pipeline as an inner,
// log-only call of the workflow call (validated, policy-checked by name, logged durably, and
// forwarded as progress). `agent` runs one subagent through the agent's SpawnProvider; `phase`
// only records that the script entered a phase.
import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import { defineTool } from '../define.ts';
import type { JsonValue } from '../types.ts';

const text = (max: number) => v.pipe(v.string(), v.maxLength(max));

export const agentStep = defineTool({
  name: 'agent',
  description: 'One subagent run of a workflow.',
  parameters: v.strictObject({
    prompt: v.pipe(v.string(), v.minLength(1), v.maxLength(100_000)),
    phase: v.optional(text(200)),
    provider: v.optional(text(200)),
    model: v.optional(text(200)),
    workflow: text(200),
  }),
  output: {
    schema: v.object({ text: v.string(), value: v.optional(v.custom<JsonValue>(() => true)) }),
    render: (_args, value) => [{ type: 'text', text: value.text }],
  },
  // Steps of one workflow overlap; the runner bounds how many run at once.
  isConcurrencySafe: () => true,
  async execute(args, exec) {
    const spawner = exec.agent.services.spawn;
    if (spawner === undefined)
      throw new SandboxError(
        'TOOL_FAILED',
        'This agent cannot run subagents; create it with "subagents": true to use workflows.',
      );
    const result = await spawner.spawn({
      ...args,
      callId: exec.callId,
      sessionId: exec.agent.sessionId,
      signal: exec.signal,
    });
    return result.value === undefined ? { text: result.text } : { text: result.text, value: result.value };
  },
});

export const phaseStep = defineTool({
  name: 'phase',
  description: 'A workflow entering one of its phases.',
  parameters: v.strictObject({ title: v.pipe(v.string(), v.minLength(1), v.maxLength(200)) }),
  output: { schema: v.string() },
  isConcurrencySafe: () => true,
  execute: (args) => args.title,
});
