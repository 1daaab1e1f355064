// Making a child or a teammate: the bounds are checked, the child agent is made (the agent service's
// createChild), its run is recorded, and the run request the client answers is created and watched
// (runs.ts); a foreground spawn then waits for the run's outcome.
// Invariants: a child never gets more than its parent (same preset, mode, restrictions, policy and
// sandbox options, depth one deeper: createChild gets only the links); every bound is checked before
// anything is made; spawns of one parent run one at a time up to the point where the child's run
// counts (`exclusive`); a child that cannot be started is removed again; a child deleted while its
// run was being recorded leaves no run running nor run request pending.
import type { Agent } from '../../agents/types.ts';
import { SandboxError } from '../../errors.ts';
import type { JsonValue } from '../../json.ts';
import type { SubagentPayload } from '../../requests/index.ts';
import { forkConversation } from '../../session/messages.ts';
import type { AgentLinks, ChildRun } from '../../store/index.ts';
import { LEAD_NAME } from '../directory.ts';
import { checkBytes, exclusive, type TeamState } from './state.ts';
import type { SpawnInput, SpawnResult } from './types.ts';

const TEAMMATE_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

function limitError(limit: string, max: number, message: string): SandboxError {
  return new SandboxError('CHILD_LIMIT_EXCEEDED', message, { data: { limit, max } });
}

/** The links of the child `input` asks for, once every bound allows it. */
async function checkSpawn(state: TeamState, parent: Agent, input: SpawnInput): Promise<AgentLinks> {
  const { agents, teams } = state;
  const bounds = state.limits(parent.tenantId);
  const depth = (parent.links?.depth ?? 0) + 1;
  if (depth > bounds.maxDepth)
    throw limitError(
      'depth',
      bounds.maxDepth,
      `A child here would be at depth ${depth}; this tenant allows ${bounds.maxDepth}. Do the work yourself or report back to your parent.`,
    );
  const children = await agents.children(parent.tenantId, parent.id);
  if (children.length >= bounds.childrenPerAgent)
    throw limitError(
      'children',
      bounds.childrenPerAgent,
      `This agent has ${children.length} children, its tenant's most; give work to one of them with send_message instead.`,
    );
  const runs = await Promise.all(children.map((c) => teams.run(c.id)));
  const running = runs.filter((run) => run?.status === 'running').length;
  if (running >= bounds.concurrentChildren)
    throw limitError(
      'concurrent',
      bounds.concurrentChildren,
      `${running} children of this agent are running, its tenant's most at once; wait for one to finish first.`,
    );
  checkBytes(state, parent.tenantId, input.prompt, 'prompt');
  const links: AgentLinks = { parentId: parent.id, role: input.role, depth };
  if (input.role !== 'teammate') return links;
  if (parent.links?.role === 'teammate')
    throw new SandboxError(
      'DENIED',
      'Only the lead spawns teammates; ask it to with send_message(target: "lead", …).',
    );
  const name = input.name ?? '';
  if (!TEAMMATE_NAME.test(name) || name === LEAD_NAME)
    throw new SandboxError(
      'INVALID_ARGUMENTS',
      `A teammate name is 1-64 letters, digits, "_" or "-", and not "${LEAD_NAME}"; got ${JSON.stringify(name)}.`,
    );
  if ((await agents.teammates(parent.tenantId, parent.id)).some((t) => t.links?.name === name))
    throw new SandboxError('CONFLICT', `Your team already has a teammate named ${name}; pick another name.`);
  return { ...links, teamId: parent.id, name };
}

export async function spawn(
  state: TeamState,
  parent: Agent,
  input: SpawnInput,
  call: { callId: string; signal: AbortSignal },
): Promise<SpawnResult> {
  const { options, events, requests, teams, runs } = state;
  const { links, child, run } = await exclusive(state.spawning, parent.id, async () => {
    const links = await checkSpawn(state, parent, input);
    const child = await options.createChild(parent, links);
    const run = {
      agentId: child.id,
      tenantId: child.tenantId,
      parentId: parent.id,
      description: input.description,
    };
    // Counted as running from here, before the next spawn of this parent is checked.
    await teams.putRun({ ...run, status: 'running' });
    return { links, child, run };
  });
  const base = { agent_id: child.id, ...(links.name === undefined ? {} : { name: links.name }) };
  let requestId: string;
  try {
    if (input.context === 'fork')
      await forkConversation(
        events,
        parent.sessionId,
        child.sessionId,
        state.limits(parent.tenantId).forkMessages,
      );
    const names = await options.toolNames(child);
    const payload: SubagentPayload = {
      prompt: input.prompt,
      agentId: child.id,
      description: input.description,
      role: input.role,
      context: input.context,
      background: input.background,
      tools: `/v1/agents/${child.id}/tools`,
      toolNames: names,
      ...(links.name === undefined ? {} : { name: links.name }),
      ...(input.provider === undefined ? {} : { provider: input.provider }),
    };
    const request = await requests.create({
      sessionId: parent.sessionId,
      kind: 'subagent',
      callId: call.callId,
      payload: payload as JsonValue,
      expiresAt: state.now() + state.limits(parent.tenantId).runTtlMs,
    });
    requestId = request.id;
    await teams.putRun({ ...run, status: 'running', requestId });
    runs.watch(child.id, request);
    // The child deleted meanwhile (its parent's deletion lists it once made): its deletion may
    // have ended its run before the request and the run above were stored. Read after the writes,
    // so whichever comes second sees the other; cancelling the request ends the run (its watch).
    if ((await state.agents.get(child.tenantId, child.id)) === undefined) {
      await requests.cancel(request.id);
      throw new SandboxError('NOT_FOUND', `Agent ${child.id} was deleted.`, { data: { agentId: child.id } });
    }
  } catch (error) {
    await options.removeChild(child).catch(() => undefined);
    throw error;
  }
  if (input.background) return { ...base, status: 'running' };
  let outcome: ChildRun;
  try {
    outcome = await runs.outcome(child.id, call.signal);
  } catch (error) {
    // A foreground child is cancelled with the call that waits on it; the child itself stays.
    await requests.cancel(requestId);
    throw error;
  }
  return {
    ...base,
    status: outcome.status,
    ...(outcome.output === undefined ? {} : { output: outcome.output }),
  };
}
