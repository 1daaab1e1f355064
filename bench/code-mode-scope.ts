// What the code-mode benches share: a registry scope with run_code mounted on the given isolate host
// and one concurrency-safe `noop` tool, and the two ways to call it (inside a program, directly).

import * as v from 'valibot';
import type { IsolateHost } from '../host/isolates/index.ts';
import { createMemoryEventLog } from '../host/store/memory.ts';
import { type AgentScope, createRegistry, defineTool, type ToolCall } from '../host/tools/index.ts';
import { createPtcExecutor } from '../host/tools/ptc/index.ts';

export interface CodeModeScope {
  /** run_code through the pipeline; resolves with the program's value. */
  runCode(code: string): Promise<unknown>;
  /** One noop call made directly (native mode), through the same pipeline. */
  direct(): Promise<void>;
}

export function codeModeScope(isolates: IsolateHost): CodeModeScope {
  const agent: AgentScope = { id: 'bench', sessionId: 'bench', services: {} };
  const scope = createRegistry({ log: createMemoryEventLog() }).scope('code');
  scope.mount(createPtcExecutor({ isolates }));
  scope.register(
    defineTool({
      name: 'noop',
      description: 'Does nothing.',
      parameters: v.object({}),
      output: { schema: v.null() },
      isConcurrencySafe: () => true,
      execute: () => null,
    }),
  );
  let seq = 0;
  return {
    async runCode(code) {
      const call: ToolCall = { id: `p${++seq}`, name: 'run_code', arguments: { code, description: 'bench' } };
      const [result] = await scope.execute([call], { agent, mode: 'code' });
      if (!result?.ok) throw new Error(`run_code failed: ${JSON.stringify(result?.content)}`);
      return (result.value as { value?: unknown } | undefined)?.value;
    },
    async direct() {
      const [result] = await scope.execute([{ id: `n${++seq}`, name: 'noop', arguments: {} }], {
        agent,
        mode: 'native',
      });
      if (!result?.ok) throw new Error('noop failed');
    },
  };
}
