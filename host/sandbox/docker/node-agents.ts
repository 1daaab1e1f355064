// The embedded node's calls on one agent's sandbox: open a channel to its sandboxd (started when
// stopped, restarted on request, and made again on its old workspace when the container vanished
// behind the node's back: removed by hand or by the engine), its state, stop, pause and destroy.
// Invariants: a destroyed agent's sandbox is never made again here (open fails with
// SANDBOX_UNAVAILABLE); an open waits for a stop or pause in progress (and thaws a frozen
// container: channel.ts); a replacement is reported through onError (files kept, or an empty
// workspace when its workspace was gone too). With `rollImage`, a container the idle reaper (or
// anyone) stopped that was made from another image than the node's is made again from the node's
// image on its workspace at the next open: an image upgrade reaches each agent at its next idle
// moment, never under a running process (a running or frozen container is left as it is).
import type Docker from 'dockerode';
import { SandboxError } from '../../errors.ts';
import type { OpenOptions, SandboxdChannel, SandboxState } from '../nodes/types.ts';
import type { PauseMode } from '../types.ts';
import { openChannel, stopNow } from './channel.ts';
import { fromDocker, isContainerGone, isNotFound, isNotModified } from './errors.ts';
import { lookup } from './lookup.ts';
import { agentLabels, createContainer, type Entry, type NodeBase, removeWith } from './node-state.ts';

/** The agent's entry (found again by name after a restart), or SANDBOX_UNAVAILABLE. */
async function entryOf(s: NodeBase, agentId: string): Promise<Entry> {
  const known = s.entries.get(agentId);
  if (known) return known;
  const found = await lookup(s, agentId);
  if (found) return found.entry;
  throw new SandboxError('SANDBOX_UNAVAILABLE', `Agent ${agentId} has no sandbox on this node.`, {
    data: { agentId },
  });
}

const channelOf = (s: NodeBase, entry: Entry, created: boolean): Promise<SandboxdChannel> =>
  openChannel(entry.container, {
    created,
    ...(entry.link === undefined ? {} : { link: entry.link }),
    ...(s.links === undefined ? {} : { links: s.links }),
  });

/** The node's open() (nodes/types.ts). */
export async function openAgent(
  s: NodeBase,
  agentId: string,
  options: OpenOptions = {},
): Promise<SandboxdChannel> {
  const entry = await entryOf(s, agentId);
  if (entry.destroyed)
    throw new SandboxError('SANDBOX_UNAVAILABLE', `The sandbox of agent ${agentId} was destroyed.`, {
      data: { agentId },
    });
  if (entry.stopping) await entry.stopping;
  const pending = entry.pending;
  entry.pending = undefined;
  if (pending !== undefined) {
    // A pooled container's channel, open since the pool made it: no attach on the way to ready.
    if (!options.restart && !(await settled(pending.closed))) return pending;
    pending.close();
  }
  const created = entry.created === true && !options.restart;
  entry.created = false;
  if (s.rollImage && !created && (await rolled(s, entry))) {
    if (entry.workspace) await s.workspaces.ready(entry.workspace);
    return channelOf(s, entry, true);
  }
  try {
    if (entry.workspace) await s.workspaces.ready(entry.workspace);
    if (options.restart) await stopNow(entry.container);
    return await channelOf(s, entry, created);
  } catch (e) {
    if (!(await vanished(entry, e))) throw e;
  }
  await replace(s, entry);
  if (entry.workspace) await s.workspaces.ready(entry.workspace);
  return channelOf(s, entry, true);
}

/** Whether `p` has settled (a closed channel), looked at without waiting for it. */
const settled = (p: Promise<void>): Promise<boolean> =>
  Promise.race([p.then(() => true), new Promise<boolean>((r) => setImmediate(() => r(false)))]);

/** Whether `e` (or, when it says something else, an inspect now) shows the container is gone. */
async function vanished(entry: Entry, e: unknown): Promise<boolean> {
  return (
    isContainerGone(e) ||
    entry.container.inspect().then(
      () => false,
      (x: unknown) => isNotFound(x),
    )
  );
}

/** Whether the agent's stopped container, made from another image, was made again from the node's. */
async function rolled(s: NodeBase, entry: Entry): Promise<boolean> {
  const info = await entry.container.inspect().catch(() => undefined);
  if (info === undefined || info.State.Running || info.Config.Image === s.image) return false;
  // The container alone: its workspace (a loop image or a named volume) stays for the new one.
  await entry.container.remove({ force: true }).catch((e: unknown) => {
    if (!isNotFound(e))
      throw fromDocker(e, 'Removing the sandbox for a new image', { agentId: entry.agentId });
  });
  await replace(s, entry, `was made from ${info.Config.Image}, not ${s.image} (DSH_SANDBOX_IMAGE_ROLL)`);
  return true;
}

/**
 * A new container for an agent whose container vanished (or was rolled to a new image: `why`): on
 * its old workspace when that remains.
 */
async function replace(s: NodeBase, entry: Entry, why?: string): Promise<void> {
  const old = entry.workspace;
  const kept = old !== undefined && (await s.workspaces.exists(old));
  const made = await createContainer(
    s,
    s.names.agent(entry.agentId),
    agentLabels(s, entry.agentId, entry.tenantId),
    entry.limits,
    kept ? old : undefined,
    entry.runtime,
  );
  if (old && !kept) await s.workspaces.remove(old).catch(s.onError);
  entry.container = made.container;
  entry.workspace = made.workspace;
  entry.link = made.link;
  s.onError(
    new SandboxError(
      'SANDBOX_UNAVAILABLE',
      `The sandbox container of agent ${entry.agentId} ${why ?? 'was gone (removed outside this control plane)'}; ` +
        (kept
          ? 'made a new one on its workspace (files kept, processes and jobs lost).'
          : 'made a new one with an empty workspace (its workspace was gone too).'),
      { data: { agentId: entry.agentId, container: made.container.id } },
    ),
  );
}

/** The node's state(): running, stopped, or absent (never placed here, or its container vanished). */
export async function stateOf(s: NodeBase, agentId: string): Promise<SandboxState> {
  const entry = s.entries.get(agentId) ?? (await lookup(s, agentId))?.entry;
  if (!entry) return 'absent';
  try {
    return (await entry.container.inspect()).State.Running ? 'running' : 'stopped';
  } catch (e) {
    if (isNotFound(e)) return 'absent';
    throw fromDocker(e, 'Inspecting the sandbox', { agentId });
  }
}

/** The node's stop(): a graceful stop (2 s), which open() waits for. */
export async function stopAgent(s: NodeBase, agentId: string): Promise<void> {
  const entry = s.entries.get(agentId) ?? (await lookup(s, agentId))?.entry;
  if (!entry) return;
  const container = entry.container;
  entry.stopping = container
    .stop({ t: 2 })
    .catch((e: unknown) => {
      if (!isNotModified(e)) throw fromDocker(e, 'Stopping the sandbox', { agentId });
    })
    .finally(() => {
      entry.stopping = undefined;
    });
  await entry.stopping;
}

/**
 * The node's pause(): stops or freezes the container, as asked, in the entry's `stopping` slot (an
 * open meanwhile waits, then starts or thaws it); a pause of a paused container changes nothing.
 */
export async function pauseAgent(s: NodeBase, agentId: string, mode: PauseMode): Promise<PauseMode | 'none'> {
  const found = await lookup(s, agentId);
  if (found === undefined) return 'none';
  const { entry } = found;
  while (entry.stopping) await entry.stopping.catch(() => undefined);
  // A pooled container's channel nobody took: open() would hand it over without thawing.
  entry.pending?.close();
  entry.pending = undefined;
  const pausing = settle(entry.container, mode, agentId);
  // The slot never rejects: an open waiting in it starts the container whatever the pause met.
  const slot: Promise<void> = pausing.then(
    () => undefined,
    () => undefined,
  );
  entry.stopping = slot;
  void slot.then(() => {
    if (entry.stopping === slot) entry.stopping = undefined;
  });
  return pausing;
}

/** Stops or freezes the container; what it did (`stop` when a freeze found it stopped). */
async function settle(container: Docker.Container, mode: PauseMode, agentId: string): Promise<PauseMode> {
  const state = await container.inspect().then(
    (info) => info.State,
    (e: unknown) => {
      throw fromDocker(e, 'Pausing the sandbox', { agentId });
    },
  );
  if (!state.Running) return 'stop';
  if (mode === 'freeze') {
    if (!state.Paused)
      await container.pause().catch((e: unknown) => {
        throw fromDocker(e, 'Freezing the sandbox', { agentId });
      });
    return 'freeze';
  }
  // A frozen container is thawed first, so that its processes can be told to stop.
  if (state.Paused) await container.unpause().catch(() => undefined);
  await container.stop({ t: 2 }).catch((e: unknown) => {
    if (!isNotModified(e)) throw fromDocker(e, 'Stopping the sandbox', { agentId });
  });
  return 'stop';
}

/** The node's destroy(): the container, its workspace (also when the container vanished) and link folder. */
export async function destroyAgent(s: NodeBase, agentId: string): Promise<void> {
  const entry = (await lookup(s, agentId))?.entry ?? s.entries.get(agentId);
  if (!entry) return;
  entry.destroyed = true;
  await entry.renaming;
  s.entries.delete(agentId);
  await removeWith(s, entry.container, entry.workspace);
}
