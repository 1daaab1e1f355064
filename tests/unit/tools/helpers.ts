// Shared fixtures for the tool runtime's unit tests: an agent, small tools, and a call builder.
import * as v from 'valibot';
import { type AgentScope, defineTool, type ToolCall } from '../../../host/tools/index.ts';

export const agent: AgentScope = { id: 'agent-1', sessionId: 'session-1', services: {} };

export const call = (id: string, name: string, args: unknown = {}): ToolCall => ({
  id,
  name,
  arguments: args,
});

export const echoTool = (name = 'echo', extra: { safe?: boolean; description?: string } = {}) =>
  defineTool({
    name,
    description: extra.description ?? `Echo (${name})`,
    parameters: v.object({ text: v.string() }),
    output: { schema: v.string() },
    execute: (args) => args.text,
    isConcurrencySafe: () => extra.safe ?? false,
  });

/** A tool whose body waits until released; records start/end order into `events`. */
export const gatedTool = (name: string, safe: boolean, events: string[]) => {
  const releases = new Map<string, () => void>();
  const definition = defineTool({
    name,
    description: `Gated ${name}`,
    parameters: v.object({ key: v.string() }),
    output: { schema: v.string() },
    isConcurrencySafe: () => safe,
    async execute(args) {
      events.push(`start:${args.key}`);
      await new Promise<void>((resolve) => releases.set(args.key, resolve));
      events.push(`end:${args.key}`);
      return args.key;
    },
  });
  return {
    definition,
    release: (key: string) => releases.get(key)?.(),
    started: (key: string) => releases.has(key),
  };
};

export const tick = (ms = 0) => new Promise((resolve) => setTimeout(resolve, ms));
