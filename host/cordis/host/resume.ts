// Starting again, after a restart, every plugin whose stored state says it was running: agents a
// few at a time (RESUME_CONCURRENCY), each one's own plugins one by one, in order.
// Invariant: until an agent's own plugins are back (started or failed), `resuming` holds a pending
// promise for it, so no caller sees its tool set without them.
import { toAgent } from '../../agents/service/records.ts';
import { SandboxError } from '../../errors.ts';
import type { PluginRecord } from '../../store/plugins-core.ts';
import { launch } from './launch.ts';
import type { HostState } from './state.ts';

/** Agents whose plugins resume() starts at once (each agent's own plugins start one by one). */
const RESUME_CONCURRENCY = 4;

export async function resume(
  state: HostState,
  onError?: (pluginId: string, error: unknown) => void,
): Promise<number> {
  const byAgent = new Map<string, PluginRecord[]>();
  for (const record of await state.deps.store.listRunning()) {
    const list = byAgent.get(record.agentId) ?? [];
    list.push(record);
    byAgent.set(record.agentId, list);
  }
  let started = 0;
  async function resumeAgent(records: PluginRecord[]): Promise<void> {
    for (const record of records) {
      const owner = { tenantId: record.tenantId, agentId: record.agentId };
      try {
        const agentRecord = await state.deps.agents.get(record.tenantId, record.agentId);
        if (agentRecord === undefined || record.currentPackageId === undefined) {
          await state.deps.store.setRunState(owner, record.id, { running: false });
          continue;
        }
        const outcome = await launch(state, toAgent(agentRecord), record.id, record.currentPackageId, 'run');
        if (outcome.error === undefined) started++;
        else onError?.(record.id, new SandboxError('TOOL_FAILED', outcome.error.message));
      } catch (error) {
        onError?.(record.id, error);
      }
    }
  }
  // Every agent's wait starts now; agents resume a few at a time, each one's plugins in order.
  const queue = [...byAgent.entries()].map(([agentId, records]) => {
    let settle = () => {};
    const done = new Promise<void>((resolve) => {
      settle = resolve;
    });
    state.resuming.set(agentId, done);
    return { agentId, records, settle };
  });
  const worker = async () => {
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      await resumeAgent(next.records);
      state.resuming.delete(next.agentId);
      next.settle();
    }
  };
  await Promise.all(Array.from({ length: RESUME_CONCURRENCY }, worker));
  return started;
}
