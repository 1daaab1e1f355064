// The no-op tool the pipeline benches call (concurrency-safe, returns its argument), the agent
// they call it as, and a batch of N calls to it. Not a bench itself.
import * as v from 'valibot';
import { type AgentScope, defineTool, type ToolCall } from '../../host/tools/index.ts';

export const noop = defineTool({
  name: 'noop',
  description: 'Does nothing.',
  parameters: v.object({ n: v.number() }),
  output: { schema: v.number() },
  execute: (args) => args.n,
  isConcurrencySafe: () => true,
});

export const benchAgent: AgentScope = { id: 'bench', sessionId: 'bench-session', services: {} };

/** `size` calls to noop, ids b0…, in one batch. */
export const noopBatch = (size: number): ToolCall[] =>
  Array.from({ length: size }, (_, i) => ({ id: `b${i}`, name: 'noop', arguments: { n: i } }));
