// The composed service (assembleAgents) for unit tests that go through the agent service: a
// durable store in memory, the memory sandbox whose commands are recorded (each prints `ran`),
// a real isolate host of one worker, and one tenant. `close()` stops all three.
import { type AssembleOptions, assembleAgents } from '../../host/agents/assemble.ts';
import { createIsolateHost } from '../../host/isolates/index.ts';
import { createMemoryProvider } from '../../host/sandbox/memory/provider.ts';
import { openStore } from '../../host/store/index.ts';

/** `options`: more of assembleAgents's options (checkpoints, say) over the helper's. */
export const composedService = async (
  options: Partial<Omit<AssembleOptions, 'store' | 'sandboxes' | 'isolates'>> = {},
) => {
  const isolates = createIsolateHost({ workers: 1, prewarm: 1 });
  const store = openStore({ path: ':memory:' });
  const commands: string[] = [];
  const sandboxes = createMemoryProvider({
    run: (proc) => {
      commands.push(proc.command);
      proc.stdout('ran');
      return 0;
    },
  });
  const { agents, teamBoard } = assembleAgents({ ...options, store, sandboxes, isolates });
  const tenant = (await store.tenants.createTenant('t')).id;
  async function close(): Promise<void> {
    await agents.close(0);
    store.close();
    await isolates.close();
  }
  return { agents, store, commands, tenant, teamBoard, close };
};
