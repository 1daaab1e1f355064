// Entry point of a plugin worker process (forked by processes.ts with --no-node-snapshot, a heap
// cap and an empty environment). It holds the isolates of the plugins placed on it (one each),
// routes the runtime's messages to them, and governs their memory by what the process really
// holds, with the isolate host's governor (host/isolates/memory.ts): a plugin whose isolate ran
// when the process went over its allowance, or that holds more than its own limit while it waits,
// ends as `memory`. Invariants: losing the parent ends this process; a plugin's failure to load
// is answered with `failed`, never by this process ending.
import { createOutbox } from '../../isolates/outbox.ts';
import { startWorkerUpkeep } from '../../isolates/worker-kit.ts';
import type { HostToPluginWorker, PluginWorkerToHost } from '../protocol.ts';
import { clip, isMessage, unbatch } from '../protocol.ts';
import { loadPlugin, type PluginIsolate } from './isolate.ts';

interface WorkerArgs {
  /** The most this process may hold (resident); its plugins are ended before it gets there. */
  budgetMb: number;
}

const args: WorkerArgs = { budgetMb: 870, ...JSON.parse(process.argv[2] ?? '{}') };
const plugins = new Map<number, PluginIsolate>();
/** Loads under way: messages for them wait until the isolate exists. */
const loading = new Map<number, Array<HostToPluginWorker>>();

const outbox = createOutbox<PluginWorkerToHost>((frame) => {
  try {
    return process.send?.(frame) ?? false;
  } catch {
    return false; // channel gone: the disconnect handler ends the process
  }
});

/** A plugin's last message: it leaves the map (and never enters it, if it ends while loading). */
const gone = new Set<number>();
const post = (message: PluginWorkerToHost): void => {
  if (message.t === 'failed' || message.t === 'unloaded') {
    if (!plugins.delete(message.id) && loading.has(message.id)) gone.add(message.id);
  }
  outbox.post(message);
};

const onLoad = async (msg: Extract<HostToPluginWorker, { t: 'load' }>): Promise<void> => {
  loading.set(msg.id, []);
  let plugin: PluginIsolate;
  try {
    plugin = await loadPlugin(msg, post);
  } catch (error) {
    loading.delete(msg.id);
    outbox.post({
      t: 'failed',
      id: msg.id,
      kind: 'crash',
      message: clip(`could not create the plugin's isolate: ${String(error)}`, 500),
    });
    return;
  }
  const queued = loading.get(msg.id) ?? [];
  loading.delete(msg.id);
  if (gone.delete(msg.id)) {
    // It ended before it was registered here; an unload still gets its answer.
    if (queued.some((m) => m.t === 'unload')) outbox.post({ t: 'unloaded', id: msg.id });
    return;
  }
  plugins.set(msg.id, plugin);
  for (const message of queued) route(message);
};

const route = (msg: HostToPluginWorker): void => {
  if (msg.t === 'load') return void onLoad(msg);
  if (msg.t === 'shutdown') return void exit();
  if (msg.t === 'batch') return;
  const waiting = loading.get(msg.id);
  if (waiting !== undefined) return void waiting.push(msg);
  const plugin = plugins.get(msg.id);
  switch (msg.t) {
    case 'execute':
      // A plugin that is gone answers through the runtime (it already has its `failed`).
      return void plugin?.execute(msg.entry, msg.token, msg.argsJson, msg.callId);
    case 'event':
      return void plugin?.event(msg.name, msg.dataJson);
    case 'result':
      return void plugin?.deliver([[msg.callId, msg.envelope]]);
    case 'unload':
      if (plugin === undefined) return void outbox.post({ t: 'unloaded', id: msg.id });
      return void plugin.unload();
  }
};

/** Results of one frame, grouped per plugin so that each isolate is entered once for them. */
const deliverAll = (results: Array<Extract<HostToPluginWorker, { t: 'result' }>>): void => {
  const byPlugin = new Map<number, Array<[number, string]>>();
  for (const { id, callId, envelope } of results) {
    if (loading.has(id)) {
      route({ t: 'result', id, callId, envelope });
      continue;
    }
    const list = byPlugin.get(id);
    if (list === undefined) byPlugin.set(id, [[callId, envelope]]);
    else list.push([callId, envelope]);
  }
  for (const [id, list] of byPlugin) plugins.get(id)?.deliver(list);
};

// A graceful exit can hang inside a disposed isolate; the parent kills us after its grace period.
const exit = (): void => {
  for (const plugin of plugins.values()) plugin.dispose();
  process.exit(0);
};

process.on('message', (raw: unknown) => {
  if (!isMessage(raw)) return;
  const results: Array<Extract<HostToPluginWorker, { t: 'result' }>> = [];
  for (const msg of unbatch(raw) as HostToPluginWorker[]) {
    if (msg.t === 'result') {
      results.push(msg);
      continue;
    }
    if (results.length > 0) deliverAll(results.splice(0));
    route(msg);
  }
  if (results.length > 0) deliverAll(results);
});
// Every poll: CPU as the process really used it (host/isolates/cpu.ts) and dead isolates, then
// memory (host/isolates/memory.ts). Plugins are mostly idle: one is checked against its own limit
// when it has just stopped running, or when the process is over its allowance with nobody running.
startWorkerUpkeep({ budgetMb: args.budgetMb, pollMs: 25, live: () => plugins.values() });

outbox.send({ t: 'ready', pid: process.pid });
