// What the parts of the agent service share (service.ts wires them; parts.ts builds those that
// reach each other late), and the operations that span them: deleting an agent with its
// descendants, appending messages, closing. Invariants: the state is complete before
// createAgentService returns, and nothing reads a part before then but the team service's resume();
// `closing` only ever turns true (close()); delete marks the agent and all its descendants deleted
// synchronously, before anything is awaited.
import type { PluginHost } from '../../cordis/host.ts';
import type { SandboxProvider } from '../../sandbox/types.ts';
import { type ConversationMessage, messageEvents } from '../../session/messages.ts';
import type { AgentRecord } from '../../store/index.ts';
import type { SessionEvent } from '../../store/types.ts';
import type { TeamService } from '../../teams/service.ts';
import type { TenantSettingsReader } from '../tenant-settings.ts';
import type { Agent } from '../types.ts';
import type { Batches } from './batches.ts';
import type { createAgentCreation } from './create.ts';
import type { Deletion } from './deletion.ts';
import type { LiveAgents } from './live.ts';
import type { Pauses } from './pause.ts';
import { type AgentLookup, type DeletionMarks, getAgent } from './records.ts';
import type { SandboxBinding } from './sandbox.ts';
import type { AgentServiceOptions } from './types.ts';

export interface AgentServiceState {
  readonly options: AgentServiceOptions;
  readonly store: AgentServiceOptions['store'];
  readonly provider: SandboxProvider;
  closing: boolean;
  readonly isClosing: () => boolean;
  readonly marks: DeletionMarks;
  readonly lookup: AgentLookup;
  readonly sandboxes: SandboxBinding;
  live: LiveAgents;
  plugins: PluginHost | undefined;
  batches: Batches;
  deletion: Deletion;
  create: ReturnType<typeof createAgentCreation>;
  teams: TeamService | undefined;
  settings: TenantSettingsReader;
  pauses: Pauses;
}

/**
 * Deletes the agent and its descendants: all are marked deleted synchronously (deepest first,
 * so no child is ever left without its parent), then torn down together.
 */
export async function removeAgent(state: AgentServiceState, tenantId: string, id: string): Promise<void> {
  const { deletion, teams } = state;
  const agent = await getAgent(state.store.agents, tenantId, id);
  const doomed = (await teams?.descendants(agent)) ?? [];
  const children = doomed.map((child) => deletion.delete(tenantId, child.id));
  const [own, ...settled] = await Promise.allSettled([deletion.delete(tenantId, id), ...children]);
  if (own?.status === 'rejected') throw own.reason;
  // A child stored after the listing above (its spawn was under way), under the agent or under
  // one of its descendants: listed now, after their stamps; one stored later still sees its
  // parent's stamp and removes itself (create.ts).
  const listed = new Set([id, ...doomed.map((child) => child.id)]);
  const late: AgentRecord[] = [];
  for (const from of [id, ...doomed.map((child) => child.id)])
    for (const child of (await teams?.descendants({ id: from, tenantId })) ?? [])
      if (!listed.has(child.id)) {
        listed.add(child.id);
        late.push(child);
      }
  settled.push(...(await Promise.allSettled(late.map((child) => deletion.delete(tenantId, child.id)))));
  // A child deleted meanwhile by its own DELETE is gone either way.
  state.pauses.forget([id, ...doomed.map((child) => child.id), ...late.map((child) => child.id)]);
  for (const outcome of settled)
    if (outcome.status === 'rejected' && (outcome.reason as { code?: string })?.code !== 'NOT_FOUND')
      throw outcome.reason;
  await state.options.onRemoved?.(tenantId, id);
}

export async function appendMessages(
  state: AgentServiceState,
  agent: Agent,
  messages: readonly ConversationMessage[],
): Promise<SessionEvent[]> {
  await state.live.of(agent); // NOT_FOUND once the agent is gone
  const appended = await state.store.events.append(messageEvents(agent.sessionId, messages));
  await state.store.events.flush();
  return appended;
}

export async function closeService(state: AgentServiceState, graceMs = 10_000): Promise<void> {
  state.closing = true;
  state.deletion.stopRetrying();
  state.teams?.close();
  state.pauses.close();
  await state.batches.drain(graceMs);
  await state.plugins?.close();
  state.live.retireAll();
  await state.provider.close();
}
