// An agent's live session, as the provider keeps it on the control plane's side: opened on the
// first call (and again after the reaper stopped the sandbox or the channel closed), followed until
// it ends, reopened at once with a restart when sandboxd stops answering. Also the agent's Sandbox
// handle, whose every call goes through live().
// Invariants: an entry has at most one session opening or open (`entry.live`), forgotten when it
// ends; a destroyed entry never opens again (its old handles fail with SANDBOX_UNAVAILABLE); the
// egress proxy served for a session stops when that session ends; a call whose session ends under
// it fails with NODE_UNREACHABLE naming the node when the node went too (SandboxNode.lost), so it
// reads as the calls after it do.

import type { AttachedEgress } from '../../egress/proxy/index.ts';
import { SandboxError } from '../../errors.ts';
import type { SandboxNode } from '../nodes/types.ts';
import { WORKSPACE_ROOT } from '../paths.ts';
import { isUnresponsive, type SandboxdEgress } from '../sandboxd/client.ts';
import type { Sandbox, SandboxLimits } from '../types.ts';
import type { Reapable } from './reaper.ts';
import { createSandboxHandle } from './sandbox.ts';
import { type ConnectSandboxd, closeLive, type Live, openSession } from './session.ts';

/** One agent known to this control plane; the reaper reads and writes its Reapable part. */
export interface Agent extends Reapable {
  agentId: string;
  /** The limits its session is opened with (the read and output caps). */
  limits: SandboxLimits;
  /** destroy() ran: calls through old handles fail instead of making a new sandbox. */
  destroyed?: boolean;
}

/** What the provider's parts share on the control plane's side. */
export interface Sessions {
  node: SandboxNode<unknown>;
  connect: ConnectSandboxd;
  agents: Map<string, Agent>;
  onError: (error: unknown) => void;
  resolve: (path: string) => string;
  egress: ((agentId: string, egress: SandboxdEgress) => AttachedEgress) | undefined;
  spoolDir: string | undefined;
}

/** How the agent's sessions are opened (a link that cannot be made is reported). */
export const sessionOptions = (s: Sessions, limits: SandboxLimits) => ({
  connect: s.connect,
  limits,
  onLinkError: (e: unknown) =>
    s.onError(new SandboxError('SANDBOX_UNAVAILABLE', `${String(e)} (the attach stream serves instead)`)),
});

/**
 * Makes `opening` the agent's session and follows it: egress served, forgotten (or restarted) when
 * it ends. The session is handed to calls once the tenant's interception CA is on its way to
 * sandboxd (AttachedEgress.trusted), so no command of the session starts before its bundle has it.
 */
export function track(s: Sessions, agent: Agent, opening: Promise<Live>): Promise<Live> {
  const ready = opening.then((l) => {
    const egress = l.session.egress;
    let trusted: Promise<void> | undefined;
    if (egress && s.egress) {
      const attached = s.egress(agent.agentId, egress);
      trusted = attached.trusted;
      void l.channel.closed.then(attached.stop);
      void l.session.closed?.then(attached.stop, attached.stop);
    }
    void l.channel.closed.then(forget);
    void l.session.closed?.then((reason) => {
      forget();
      // sandboxd stopped answering: restart its sandbox now, so the next call finds it back.
      if (isUnresponsive(reason) && !agent.live && !agent.destroyed && s.agents.get(agent.agentId) === agent)
        track(s, agent, openAgent(s, agent, true)).catch(s.onError);
    }, forget);
    return trusted === undefined ? l : trusted.then(() => l);
  });
  agent.live = ready;
  const forget = (): void => {
    if (agent.live === ready) agent.live = undefined;
  };
  ready.catch(forget);
  return ready;
}

/** The agent's session, opened when it has none (after a stop in progress). */
export async function live(s: Sessions, agent: Agent): Promise<Live> {
  agent.lastUsed = Date.now();
  if (agent.stopping) await agent.stopping;
  return agent.live ?? track(s, agent, openAgent(s, agent));
}

async function openAgent(s: Sessions, agent: Agent, restart = false): Promise<Live> {
  if (agent.destroyed)
    throw new SandboxError('SANDBOX_UNAVAILABLE', `The sandbox of agent ${agent.agentId} was destroyed.`, {
      data: { agentId: agent.agentId },
    });
  return openSession(s.node, agent.agentId, sessionOptions(s, agent.limits), restart);
}

/** Closes the agent's session, if any (the sandbox keeps running). */
export async function detachAgent(agent: Agent): Promise<void> {
  const l = agent.live;
  agent.live = undefined;
  if (l) await closeLive(await l.catch(() => undefined));
}

/** The agent's Sandbox: every call counts as in flight for the reaper and runs on live(). */
export function handleOf(s: Sessions, agent: Agent, id: string): Sandbox {
  return createSandboxHandle({
    id,
    agentId: agent.agentId,
    root: WORKSPACE_ROOT,
    resolve: s.resolve,
    use: async (fn) => {
      agent.inFlight++;
      try {
        const { session } = await live(s, agent);
        try {
          return await fn(session);
        } catch (e) {
          // The session ended under the call: the node says whether it went with it.
          throw s.node.lost === undefined ? e : await s.node.lost(agent.agentId, e);
        }
      } finally {
        agent.inFlight--;
        agent.lastUsed = Date.now();
      }
    },
    detach: () => detachAgent(agent),
    ...(s.spoolDir === undefined ? {} : { spoolDir: s.spoolDir }),
  });
}
