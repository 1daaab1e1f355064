// Fixtures for code-mode tests: a registry whose `code` preset mounts the PTC executor over a real
// isolate host, an in-memory event log, and small tools that record how they were called.
import * as v from 'valibot';
import type { IsolateHost } from '../../../host/isolates/index.ts';
import { createMemoryEventLog } from '../../../host/store/memory.ts';
import { type AgentScope, createRegistry, defineTool, type ToolCall } from '../../../host/tools/index.ts';
import { createPtcExecutor, type PtcExecutorOptions } from '../../../host/tools/ptc/index.ts';

export const agent: AgentScope = { id: 'agent-1', sessionId: 'session-1', services: {} };

export const program = (id: string, code: string): ToolCall => ({
  id,
  name: 'run_code',
  arguments: { code, description: 'test program' },
});

/** Text of a result's content, text parts joined. */
export const textOf = (content: readonly { type: string; text?: string }[]): string =>
  content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n');

/** A tool that sleeps `ms` and tracks how many of its kind ran at once. */
export const sleeper = (name: string, safe: boolean, ms = 60) => {
  const stats = { inFlight: 0, maxInFlight: 0, calls: 0 };
  const definition = defineTool({
    name,
    description: `Sleeps ${ms} ms and returns its key (${safe ? 'concurrency-safe' : 'exclusive'}).`,
    parameters: v.object({ key: v.string() }),
    output: { schema: v.string() },
    isConcurrencySafe: () => safe,
    async execute(args) {
      stats.calls++;
      stats.maxInFlight = Math.max(stats.maxInFlight, ++stats.inFlight);
      await new Promise((resolve) => setTimeout(resolve, ms));
      stats.inFlight--;
      return args.key;
    },
  });
  return { definition, stats };
};

export const setup = (isolates: IsolateHost, options: Omit<PtcExecutorOptions, 'isolates'> = {}) => {
  const log = createMemoryEventLog();
  const registry = createRegistry({ log });
  const preset = registry.scope('code');
  preset.mount(createPtcExecutor({ isolates, ...options }));
  return { registry, preset, log, scope: preset.child('agent-1') };
};
