// The creator-plugin runtime's operations on a plugin: start, update (Cordis HMR's: dispose the old
// package's effects, load the new one, and when that fails load the old one again), stop, forget
// and closing the runtime. Invariants: each runs on the plugin's chain (`serial`), never
// interleaved with another on the same plugin; the package a plugin runs moves only on success; a
// plugin is found only by its owner (anyone else gets NOT_FOUND).
import { SandboxError } from '../../errors.ts';
import type { PluginOwner } from '../../store/plugins-core.ts';
import { DEFAULT_PLUGIN_LIMITS, type PluginStatus } from '../types.ts';
import { fail, load, unload } from './instances.ts';
import {
  log,
  notFound,
  owned,
  type RunPackage,
  type RunResult,
  type RuntimeState,
  result,
  type StartInput,
  serial,
  setState,
  statusOf,
} from './state.ts';

/** Starts a stopped or failed plugin; CONFLICT when it is starting or running (use update). */
export function start(state: RuntimeState, input: StartInput): Promise<RunResult> {
  const { options, plugins } = state;
  const limits = {
    ...DEFAULT_PLUGIN_LIMITS,
    ...options.limits,
    ...options.limitsOf?.(input.owner.tenantId),
  };
  let plugin = plugins.get(input.pluginId);
  if (plugin !== undefined && owned(state, input.owner, input.pluginId) === undefined)
    return Promise.reject(notFound(input.pluginId));
  if (plugin?.state === 'running' || plugin?.state === 'starting') {
    return Promise.reject(
      new SandboxError('CONFLICT', `Plugin ${input.pluginId} is already ${plugin.state}; update it instead.`),
    );
  }
  if (plugin === undefined) {
    plugin = {
      owner: { tenantId: input.owner.tenantId, agentId: input.owner.agentId },
      pluginId: input.pluginId,
      limits,
      capabilities: input.capabilities,
      config: input.config ?? {},
      state: 'stopped',
      logs: [],
      droppedLogs: 0,
      restarts: 0,
      strikes: 0,
      queue: Promise.resolve(),
    };
    plugins.set(input.pluginId, plugin);
  } else {
    plugin.limits = limits;
    plugin.capabilities = input.capabilities;
    plugin.config = input.config ?? {};
  }
  const target = plugin;
  target.strikes = 0;
  setState(state, target, 'starting');
  return serial(target, async () => {
    const error = await load(state, target, { packageId: input.packageId, source: input.source });
    if (error) {
      target.current ??= { packageId: input.packageId, source: input.source };
      fail(state, target, error);
    }
    return result(target, error);
  });
}

/** Replaces the running package (or starts this one when the plugin is not running). */
export function update(
  state: RuntimeState,
  owner: PluginOwner,
  pluginId: string,
  pkg: RunPackage,
): Promise<RunResult> {
  const plugin = owned(state, owner, pluginId);
  if (plugin === undefined) return Promise.reject(notFound(pluginId));
  return serial(plugin, async () => {
    plugin.strikes = 0;
    const old = plugin.state === 'running' ? plugin.current : undefined;
    if (old)
      log(state, plugin, {
        level: 'info',
        text: `runtime: updating from ${old.packageId} to ${pkg.packageId}`,
      });
    await unload(state, plugin);
    const error = await load(state, plugin, pkg);
    if (error === undefined) return result(plugin);
    log(state, plugin, {
      level: 'error',
      text: `runtime: ${pkg.packageId} failed to start (${error.kind}): ${error.message}`,
    });
    if (old === undefined) {
      fail(state, plugin, error);
      return result(plugin, error);
    }
    // As Cordis HMR: the new package failed, so the old one comes back.
    const again = await load(state, plugin, old);
    if (again) fail(state, plugin, again);
    else plugin.error = error;
    return result(plugin, error);
  });
}

/** Disposes everything the plugin registered and its isolate; a no-op when it is not loaded. */
export function stop(state: RuntimeState, owner: PluginOwner, pluginId: string): Promise<PluginStatus> {
  const plugin = owned(state, owner, pluginId);
  if (plugin === undefined) return Promise.reject(notFound(pluginId));
  return serial(plugin, async () => {
    await unload(state, plugin);
    if (plugin.state !== 'stopped') setState(state, plugin, 'stopped');
    return statusOf(plugin);
  });
}

/** Drops a stopped or failed plugin from the runtime (undefine); CONFLICT while it runs. */
export function forget(state: RuntimeState, owner: PluginOwner, pluginId: string): boolean {
  const plugin = owned(state, owner, pluginId);
  if (plugin === undefined) return false;
  if (plugin.state === 'running' || plugin.state === 'starting')
    throw new SandboxError('CONFLICT', `Plugin ${pluginId} is ${plugin.state}; stop it first.`);
  state.plugins.delete(pluginId);
  return true;
}

export async function close(state: RuntimeState): Promise<void> {
  if (state.closed) return;
  state.closed = true;
  await Promise.all([...state.plugins.values()].map((plugin) => serial(plugin, () => unload(state, plugin))));
  if (state.options.processes === undefined) await state.processes.close();
}
