// What every part of the team service shares: its stores, its collaborators (mailboxes.ts, runs.ts,
// directory.ts), the tenant's limits, and the small reads the parts have in common (an agent's
// record and display name, a text's size against the tenant's most, a mailbox item as read).
// Invariant: `spawning` holds one chain per parent with a spawn in progress, and none for a parent
// without one; `waking` the same per message target (`exclusive`).
import type { Agent } from '../../agents/types.ts';
import { SandboxError } from '../../errors.ts';
import type { RequestStore } from '../../requests/index.ts';
import type { AgentRecord, AgentStore, EventLog, MailItem, TeamStore } from '../../store/index.ts';
import { LEAD_NAME, type TeamDirectory, teamIdOf } from '../directory.ts';
import type { ChildLimits } from '../limits.ts';
import type { Mailboxes } from '../mailboxes.ts';
import type { Runs } from '../runs.ts';
import type { MessageView, TeamServiceOptions } from './types.ts';

export interface TeamState {
  readonly options: TeamServiceOptions;
  readonly agents: AgentStore;
  readonly events: EventLog;
  readonly requests: RequestStore;
  readonly teams: TeamStore;
  readonly now: () => number;
  /** The tenant's child limits: its own maxima over the service's defaults. */
  readonly limits: (tenantId: string) => ChildLimits;
  readonly mailboxes: Mailboxes;
  readonly runs: Runs;
  readonly directory: TeamDirectory;
  /**
   * One spawn per parent at a time from its check until its child's run exists (createChild
   * awaits), so two concurrent spawns cannot both pass the last slot or take the same name.
   */
  readonly spawning: Map<string, Promise<unknown>>;
  /**
   * One idle check and wake-up per target at a time (the store reads are asynchronous), so two
   * messages at once cannot both find it idle and start two turns.
   */
  readonly waking: Map<string, Promise<unknown>>;
}

/** Runs `work` after every earlier one of `key` in `chains` has settled. */
export async function exclusive<T>(
  chains: Map<string, Promise<unknown>>,
  key: string,
  work: () => Promise<T>,
): Promise<T> {
  const before = chains.get(key) ?? Promise.resolve();
  const mine = before.then(work, work);
  const tail = mine.catch(() => undefined);
  chains.set(key, tail);
  try {
    return await mine;
  } finally {
    if (chains.get(key) === tail) chains.delete(key);
  }
}

export async function recordOf(state: TeamState, agent: Agent): Promise<AgentRecord> {
  const record = await state.agents.get(agent.tenantId, agent.id);
  if (record === undefined) throw new SandboxError('NOT_FOUND', `Agent ${agent.id} was deleted.`);
  return record;
}

/** An agent's name in its team: a teammate's own, the lead's, or none. */
export async function nameOf(state: TeamState, id: string): Promise<string | undefined> {
  const record = await state.agents.byId(id);
  if (record === undefined) return undefined;
  if (record.links?.name !== undefined) return record.links.name;
  return teamIdOf(record) === record.id ? LEAD_NAME : undefined;
}

export function checkBytes(state: TeamState, tenantId: string, text: string, what: string): void {
  const max = state.limits(tenantId).messageBytes;
  const bytes = Buffer.byteLength(text);
  if (bytes > max)
    throw new SandboxError(
      'PAYLOAD_TOO_LARGE',
      `The ${what} is ${bytes} bytes; this tenant's most is ${max}. Shorten it, or write it to a file and pass its path.`,
      { data: { bytes, max } },
    );
}

/** The items as their recipient sees them: each sender's name read once, all in flight together. */
export async function messageViews(state: TeamState, items: readonly MailItem[]): Promise<MessageView[]> {
  const senders = [...new Set(items.map((item) => item.fromId))];
  const names = new Map(await Promise.all(senders.map(async (id) => [id, await nameOf(state, id)] as const)));
  return items.map((item) => messageView(item, (id) => names.get(id)));
}

export function messageView(item: MailItem, nameOf: (id: string) => string | undefined): MessageView {
  const name = nameOf(item.fromId);
  return {
    id: item.id,
    from: item.fromId,
    ...(name === undefined ? {} : { from_name: name }),
    kind: item.kind,
    message: item.body,
    at: new Date(item.createdAt).toISOString(),
  };
}
