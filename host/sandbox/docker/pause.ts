// Pausing an agent's container (the provider's pause() and resume()): `stop` stops it, the
// workspace kept (a volume or loop image outside the container); `freeze` freezes its processes
// with the engine's freezer (cgroup freezer: no CPU, memory kept). Either way the session is
// closed first, so no liveness watchdog finds a frozen sandboxd and restarts it. Resuming is
// opening the session again (agent-live.ts live(); session.ts starts a stopped container and
// thaws a frozen one), so the next use of any handle resumes it too.
// Invariants: a pause never runs while a call of the agent is in flight here (AGENT_BUSY), and
// takes the entry's `stopping` slot, so a use that starts meanwhile waits for it, then starts
// the container again; a pause of a paused container changes nothing.
import type Docker from 'dockerode';
import { SandboxError } from '../../errors.ts';
import type { PauseMode } from '../types.ts';
import { detachEntry, live } from './agent-live.ts';
import { fromDocker, isNotModified } from './errors.ts';
import { lookup } from './lookup.ts';
import type { ProviderBase } from './provider-state.ts';

const busy = (agentId: string): SandboxError =>
  new SandboxError(
    'AGENT_BUSY',
    `Agent ${agentId} has a call, transfer or terminal in flight; pause it once that is done.`,
    { data: { agentId } },
  );

/** Stops or freezes the container, as asked; what it did (`stop` when a freeze found it stopped). */
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

export async function pauseSandbox(
  s: ProviderBase,
  agentId: string,
  mode: PauseMode,
): Promise<PauseMode | 'none'> {
  const found = await lookup(s, agentId);
  if (found === undefined) return 'none';
  const { entry } = found;
  while (entry.stopping) await entry.stopping.catch(() => undefined);
  if (entry.inFlight > 0) throw busy(agentId);
  let done: PauseMode = mode;
  const stopping = (async () => {
    await detachEntry(entry);
    done = await settle(entry.container, mode, agentId);
  })();
  // The slot never rejects: a use waiting in it starts the container whatever the pause met.
  const slot: Promise<void> = stopping.then(
    () => undefined,
    () => undefined,
  );
  entry.stopping = slot;
  void slot.then(() => {
    if (entry.stopping === slot) entry.stopping = undefined;
  });
  await stopping;
  return done;
}

export async function resumeSandbox(s: ProviderBase, agentId: string): Promise<void> {
  const found = await lookup(s, agentId);
  if (found === undefined) return;
  await live(s, found.entry);
}
