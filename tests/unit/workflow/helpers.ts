// Fixtures for workflow tests: the real registry and pipeline, a real isolate host (injected by the
// test file), an in-memory event log, and a fake SpawnProvider that answers each prompt with a
// function of it and records how many subagents ran at once.
import type { IsolateHost } from '../../../host/isolates/index.ts';
import { createMemoryEventLog } from '../../../host/store/memory.ts';
import { type AgentScope, createRegistry, type ToolCall } from '../../../host/tools/index.ts';
import {
  registerWorkflowTools,
  type SpawnProvider,
  type SpawnRequest,
  type SpawnResult,
  type WorkflowRunnerOptions,
} from '../../../host/tools/workflow/index.ts';

export const fakeSpawner = (
  answer: (request: SpawnRequest) => string | SpawnResult,
  delayMs = 0,
): SpawnProvider & { requests: SpawnRequest[]; maxInFlight: number } => {
  let inFlight = 0;
  const spawner = {
    requests: [] as SpawnRequest[],
    maxInFlight: 0,
    async spawn(request: SpawnRequest): Promise<SpawnResult> {
      spawner.requests.push(request);
      spawner.maxInFlight = Math.max(spawner.maxInFlight, ++inFlight);
      try {
        if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
        request.signal.throwIfAborted();
        const out = answer(request);
        return typeof out === 'string' ? { text: out } : out;
      } finally {
        inFlight--;
      }
    },
  };
  return spawner;
};

export const workflowCall = (id: string, args: unknown): ToolCall => ({
  id,
  name: 'workflow',
  arguments: args,
});

export const setup = (
  isolates: IsolateHost,
  spawn: SpawnProvider | undefined,
  options: Omit<WorkflowRunnerOptions, 'isolates'> = {},
) => {
  const log = createMemoryEventLog();
  const registry = createRegistry({ log });
  registerWorkflowTools(registry.global, { isolates, ...options });
  const scope = registry.scope('standard').child('agent-1');
  const agent: AgentScope = {
    id: 'agent-1',
    sessionId: 'session-1',
    services: spawn === undefined ? {} : { spawn },
  };
  const run = async (call: ToolCall) => {
    const set = await scope.resolve({ agent });
    try {
      const [result] = await scope.execute([call], { agent, toolSet: set });
      if (result === undefined) throw new Error('no result');
      return result;
    } finally {
      set.dispose();
    }
  };
  const surface = async () => {
    const set = await scope.resolve({ agent });
    try {
      return scope.surface('native', set).map((t) => t.name);
    } finally {
      set.dispose();
    }
  };
  return { log, registry, scope, agent, run, surface };
};

/** Text of a result's content, text parts joined. */
export const textOf = (content: readonly { type: string; text?: string }[]): string =>
  content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n');
