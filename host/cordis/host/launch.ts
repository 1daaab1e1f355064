// Starting, updating, stopping and removing an agent's plugins, each recorded in the store.
// Invariants: every operation takes the agent it runs for and reads another agent's plugins as
// absent; a plugin's `running` flag in the store is true exactly while it should run after a
// restart (set on a successful run or update, cleared by stop and by the agent's deletion);
// deleting an agent stops and removes its plugins.
import type { Agent } from '../../agents/types.ts';
import { SandboxError } from '../../errors.ts';
import type { PluginFailure, PluginStatus } from '../../plugins/index.ts';
import { capabilities, type HostState, ownerOf, runtime, statusOf } from './state.ts';

/** Starts (or updates to) a stored package; records the outcome in the store. */
export async function launch(
  state: HostState,
  agent: Agent,
  pluginId: string,
  packageId: string,
  mode: 'run' | 'update',
): Promise<{ status: PluginStatus; error?: PluginFailure; code?: SandboxError['code'] }> {
  const owner = ownerOf(agent);
  const { store } = state.deps;
  const pkg = await store.getPackage(owner, pluginId, packageId);
  if (pkg === undefined)
    throw new SandboxError('NOT_FOUND', `Plugin ${pluginId} has no package ${packageId}.`, {
      data: { pluginId, packageId },
    });
  if (pkg.code.host === undefined)
    throw new SandboxError(
      'INVALID_ARGUMENTS',
      `Package ${packageId} has no host body; only the client runs it (fetch it over the API).`,
    );
  const known = statusOf(state, owner, pluginId);
  const was = known?.state;
  const live = was === 'running' || was === 'starting';
  if (mode === 'run' && live)
    throw new SandboxError('CONFLICT', `Plugin ${pluginId} is already ${was}; use mode "update".`);
  state.refusals.delete(pluginId);
  const source = { packageId, source: pkg.code.host };
  const result =
    known !== undefined
      ? await runtime(state).update(owner, pluginId, source)
      : await runtime(state).start({
          owner,
          pluginId,
          ...source,
          capabilities: capabilities(state, agent, pluginId, await state.deps.liveOf(agent)),
        });
  const running = result.status.state === 'running';
  await store.setRunState(owner, pluginId, {
    running,
    ...(running ? { currentPackageId: result.status.packageId as string } : {}),
  });
  if (result.ok) return { status: result.status };
  // A refused registration's code, else that of a refusal to place it (a cap of the tenant's).
  const code = state.refusals.get(pluginId) ?? result.error.code;
  return { status: result.status, error: result.error, ...(code ? { code } : {}) };
}

export async function stop(
  state: HostState,
  agent: Agent,
  pluginId: string,
): Promise<PluginStatus | undefined> {
  const owner = ownerOf(agent);
  const { made } = state;
  const status = made?.status(owner, pluginId) === undefined ? undefined : await made.stop(owner, pluginId);
  await state.deps.store.setRunState(owner, pluginId, { running: false });
  return status;
}

export async function undefine(state: HostState, agent: Agent, pluginId: string): Promise<boolean> {
  const owner = ownerOf(agent);
  const now = statusOf(state, owner, pluginId)?.state;
  if (now === 'running' || now === 'starting')
    throw new SandboxError(
      'CONFLICT',
      `Plugin ${pluginId} is ${now}; stop it first (cordis_stop), then undefine it.`,
    );
  state.made?.forget(owner, pluginId);
  state.refusals.delete(pluginId);
  return state.deps.store.undefine(owner, pluginId);
}

/** Stops the agent's plugins here and forgets them; the store's records (and `running`) stay. */
export async function releaseAgent(state: HostState, tenantId: string, agentId: string): Promise<void> {
  const owner = { tenantId, agentId };
  const { made } = state;
  if (made !== undefined)
    for (const plugin of await state.deps.store.listPlugins(owner)) {
      if (made.status(owner, plugin.id) === undefined) continue;
      await made.stop(owner, plugin.id);
      made.forget(owner, plugin.id);
    }
  state.owners.delete(agentId);
  state.providers.delete(agentId);
}

export async function removeAgent(state: HostState, agent: Agent): Promise<void> {
  const owner = ownerOf(agent);
  const { made, refusals } = state;
  const { store } = state.deps;
  for (const plugin of await store.listPlugins(owner)) {
    if (made?.status(owner, plugin.id) !== undefined) {
      await made.stop(owner, plugin.id);
      made.forget(owner, plugin.id);
    }
    refusals.delete(plugin.id);
    await store.undefine(owner, plugin.id);
  }
  state.owners.delete(agent.id);
  state.providers.delete(agent.id);
}
