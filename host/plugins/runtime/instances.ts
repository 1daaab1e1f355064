// The creator-plugin runtime's instances: loading a package into a new instance on a worker of its
// tenant (processes.ts), unloading it, and what happens when one ends by itself or its worker dies.
// Invariants: a plugin's state is `running` exactly while its current instance is loaded; every
// instance that ends has undone its registrations (instance.ts) before the state changes; a
// plugin's failure, loop or memory ends only that plugin — when a worker process dies, its plugins
// (all of one tenant: no other tenant's plugin shares it) are started again from their packages
// (`restarts`). A tenant's agents still share its workers, so a death is blamed with care: not on
// anybody when a plugin on that worker had just ended by memory or CPU (isolated-vm may leave the
// process past its cap after disposing such an isolate), else on the plugins that were running
// something; a plugin ends as `crash` only when it was to blame for two deaths since it was last
// started, so one agent's bomb cannot fail its neighbour that merely had a call in flight. A worker
// taken, idle, for another tenant (processes/reclaim.ts) ends its plugins as failed, not restarted.
import { isSandboxError, messageOf } from '../../errors.ts';
import { createInstance, type Instance } from '../instance.ts';
import type { PluginPlacement, PluginWorker } from '../processes.ts';
import type { PluginWorkerToHost } from '../protocol.ts';
import type { PluginFailure } from '../types.ts';
import { failure, log, type Plugin, type RunPackage, type RuntimeState, serial, setState } from './state.ts';

/** How long after an isolate ended by memory or CPU its worker's death is put down to it. */
const EXCUSE_MS = 30_000;

export function noteEnd(state: RuntimeState, worker: number | undefined, kind: PluginFailure['kind']): void {
  if (worker !== undefined && (kind === 'memory' || kind === 'timeout'))
    state.hostileEnds.set(worker, performance.now());
}

/** A worker's message for one of its live instances, routed to it. */
export function onWorkerMessage(
  state: RuntimeState,
  worker: PluginWorker,
  message: PluginWorkerToHost,
): void {
  if (message.t === 'ready' || message.t === 'batch') return;
  const live = state.instances.get(message.id);
  if (live !== undefined && live.worker === worker.id) live.instance.handle(message);
}

/** A worker died: its instances are lost, excused when an isolate on it had just ended by memory or CPU. */
export function onWorkerExit(state: RuntimeState, worker: PluginWorker): void {
  const excused =
    performance.now() - (state.hostileEnds.get(worker.id) ?? Number.NEGATIVE_INFINITY) < EXCUSE_MS;
  state.hostileEnds.delete(worker.id);
  for (const live of [...state.instances.values()])
    if (live.worker === worker.id) live.instance.lost(excused);
}

/** True while an instance on the worker starts, stops or has a callback in flight. */
export function workerBusy(state: RuntimeState, worker: PluginWorker): boolean {
  for (const live of state.instances.values())
    if (live.worker === worker.id && live.instance.busy()) return true;
  return false;
}

/**
 * The worker was taken, idle, for another tenant: its instances end now, and their plugins fail
 * ISOLATE_UNAVAILABLE saying so (they are not started again: each restart would take another
 * tenant's worker in turn). cordis_run starts one again, on a worker of its tenant's.
 */
export function onWorkerReclaimed(state: RuntimeState, worker: PluginWorker): void {
  for (const live of [...state.instances.values()]) if (live.worker === worker.id) live.instance.reclaimed();
}

/** Loads `pkg` into a new instance; leaves the plugin running it, or returns why not (state untouched). */
export async function load(
  state: RuntimeState,
  plugin: Plugin,
  pkg: RunPackage,
): Promise<PluginFailure | undefined> {
  if (state.closed)
    return failure(state, { kind: 'unavailable', message: 'the plugin runtime is shutting down' });
  if (pkg.source.length > plugin.limits.maxCodeBytes)
    return failure(state, {
      kind: 'limit',
      message: `the host body is over ${plugin.limits.maxCodeBytes} characters`,
    });
  let placement: PluginPlacement;
  try {
    placement = await state.processes.place({
      owner: plugin.owner,
      memoryMb: plugin.limits.memoryMb,
      caps: plugin.limits,
    });
  } catch (error) {
    return refused(state, error);
  }
  const { worker } = placement;
  const id = ++state.nextInstance;
  const instance = createInstance({
    id,
    pluginId: plugin.pluginId,
    placement,
    processes: state.processes,
    limits: plugin.limits,
    capabilities: plugin.capabilities,
    log: (line, dropped) => log(state, plugin, line, dropped),
    onEnd: (reason, suspect) => ended(state, plugin, instance, reason, suspect),
  });
  state.instances.set(id, { instance, worker: worker.id });
  plugin.instance = instance;
  setState(state, plugin, 'starting');
  try {
    plugin.name = await instance.load(pkg.source, plugin.config);
  } catch (reason) {
    state.instances.delete(id);
    plugin.instance = undefined;
    const failed = failure(state, reason as Omit<PluginFailure, 'at'>);
    noteEnd(state, worker.id, failed.kind);
    return failed;
  }
  plugin.current = pkg;
  plugin.error = undefined;
  setState(state, plugin, 'running');
  return undefined;
}

/** Why place() refused a plugin, with its stable code and, past a cap, the cap. */
function refused(state: RuntimeState, error: unknown): PluginFailure {
  if (!isSandboxError(error)) return failure(state, { kind: 'unavailable', message: messageOf(error) });
  const { limit, max } = error.data ?? {};
  const capped = error.code === 'LIMIT_EXCEEDED' && typeof limit === 'string' && typeof max === 'number';
  return failure(state, {
    kind: capped ? 'limit' : 'unavailable',
    message: error.message,
    code: error.code,
    ...(capped ? { limit: { name: limit, max } } : {}),
  });
}

/** A loaded instance ended by itself: the plugin fails, or starts again if its worker died under another. */
function ended(
  state: RuntimeState,
  plugin: Plugin,
  instance: Instance,
  reason: Omit<PluginFailure, 'at'>,
  suspect: boolean,
): void {
  noteEnd(state, state.instances.get(instance.id)?.worker, reason.kind);
  state.instances.delete(instance.id);
  if (plugin.instance !== instance) return;
  plugin.instance = undefined;
  if (reason.kind === 'crash' && suspect) plugin.strikes++;
  if (reason.kind === 'crash' && plugin.strikes < 2 && plugin.current && !state.closed) {
    const pkg = plugin.current;
    plugin.restarts++;
    log(state, plugin, {
      level: 'warn',
      text: suspect
        ? 'runtime: the plugin process died while this plugin ran something; starting again (a second such death fails it)'
        : 'runtime: the plugin process died under another plugin; starting again',
    });
    setState(state, plugin, 'starting');
    void serial(plugin, async () => {
      if (plugin.state !== 'starting' || plugin.instance !== undefined) return;
      const error = await load(state, plugin, pkg);
      if (error) fail(state, plugin, error);
    });
    return;
  }
  fail(state, plugin, failure(state, reason));
}

export function fail(state: RuntimeState, plugin: Plugin, error: PluginFailure): void {
  plugin.error = error;
  log(state, plugin, {
    level: 'error',
    text: `runtime: the plugin failed (${error.kind}): ${error.message}`,
  });
  setState(state, plugin, 'failed');
}

export async function unload(state: RuntimeState, plugin: Plugin): Promise<void> {
  const instance = plugin.instance;
  if (instance === undefined) return;
  plugin.instance = undefined;
  await instance.unload();
  state.instances.delete(instance.id);
}
