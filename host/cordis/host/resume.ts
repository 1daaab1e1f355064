// Starting again, after a restart, every plugin whose stored state says it was running: agents a
// few at a time (RESUME_CONCURRENCY), each one's own plugins one by one, in order.
// Invariant: from resume()'s call until an agent's own plugins are back (started or failed),
// ready() of that agent is pending (`listing` while the store lists the running plugins, then the
// agent's entry in `resuming`), so no caller sees its tool set without them.
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
  agentIds?: ReadonlySet<string>,
): Promise<number> {
  const byAgent = new Map<string, PluginRecord[]>();
  // ready() waits for the list too: an agent's request arriving while the store answers must not
  // find no wait for it and see its tool set without its plugins.
  let listed = () => {};
  state.listing = new Promise<void>((resolve) => {
    listed = resolve;
  });
  let running: PluginRecord[];
  try {
    running = await state.deps.store.listRunning();
  } catch (error) {
    state.listing = undefined;
    listed();
    throw error;
  }
  for (const record of running) {
    // Replicas: only the agents of the family this replica has just taken.
    if (agentIds !== undefined && !agentIds.has(record.agentId)) continue;
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
  state.listing = undefined;
  listed();
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
