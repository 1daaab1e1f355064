// Pausing an agent's sandbox (the provider's pause() and resume()), on the control plane's side of
// its node: the decision is made here, the container operations are the node's (SandboxNode.pause:
// `stop` stops it, the workspace kept; `freeze` freezes its processes with the engine's freezer,
// memory kept). The session is closed first, so no liveness watchdog finds a frozen sandboxd and
// restarts it. Resuming is opening the session again (agent-live.ts live(); the node's open starts
// a stopped sandbox and thaws a frozen one), so the next use of any handle resumes it too.
// Invariants: a pause never runs while a call of the agent is in flight here (AGENT_BUSY), and
// takes the agent's `stopping` slot, so a use that starts meanwhile waits for it, then opens the
// sandbox again; a pause of a paused sandbox changes nothing.
import { SandboxError } from '../../errors.ts';
import type { PauseMode } from '../types.ts';
import { type Agent, detachAgent, live, type Sessions } from './agent-live.ts';

const busy = (agentId: string): SandboxError =>
  new SandboxError(
    'AGENT_BUSY',
    `Agent ${agentId} has a call, transfer or terminal in flight; pause it once that is done.`,
    { data: { agentId } },
  );

export async function pauseSandbox(
  s: Sessions,
  agentId: string,
  mode: PauseMode,
): Promise<PauseMode | 'none'> {
  const agent = s.agents.get(agentId);
  // Not used by this process since it started: no session to close, no call in flight.
  if (agent === undefined) return s.node.pause(agentId, mode);
  while (agent.stopping) await agent.stopping.catch(() => undefined);
  if (agent.inFlight > 0) throw busy(agentId);
  const pausing = (async () => {
    await detachAgent(agent);
    return s.node.pause(agentId, mode);
  })();
  // The slot never rejects: a use waiting in it opens the sandbox whatever the pause met.
  const slot: Promise<void> = pausing.then(
    () => undefined,
    () => undefined,
  );
  agent.stopping = slot;
  void slot.then(() => {
    if (agent.stopping === slot) agent.stopping = undefined;
  });
  return pausing;
}

/** Starts (or thaws) the agent's sandbox and waits until its sandboxd answers; nothing when it has none. */
export async function resumeSandbox(
  s: Sessions,
  agentId: string,
  agentOf: (found: { limits: Agent['limits']; tenantId?: string }) => Agent,
): Promise<void> {
  let agent = s.agents.get(agentId);
  if (agent === undefined) {
    const found = await s.node.find(agentId);
    if (found === undefined) return;
    agent = agentOf(found);
  }
  if (agent.destroyed) return;
  await live(s, agent);
}
