// The team task board service: each team's durable board (store.teamBoards), the caller's team
// found through the TeamDirectory port, and every change told after it committed. This module
// wires the parts: state.ts holds what they share (limits, telling a change, naming a member);
// agent-board.ts is one agent's view, the rules of rules.ts run inside one store transaction per
// change; release.ts an agent's deletion releasing its tasks; here, the bounds of its writes.
// What bounds an agent's writes (writeBounds, for the guard): the scoped tasks it holds, its own
// grant, and the grant of every agent above it (a child writes only where its parents may).
import { type AgentBoard, forAgent } from './agent-board.ts';
import { soloDirectory } from './directory.ts';
import { releaseOwner } from './release.ts';
import type { BoardState, TeamBoardOptions } from './state.ts';
import type { BoardChange, WriteBounds } from './types.ts';

export type { AgentBoard, ListQuery, TaskPage } from './agent-board.ts';
export type { TeamBoardOptions } from './state.ts';

export interface TeamBoard {
  forAgent(tenantId: string, agentId: string): AgentBoard;
  /** `listener` is told every committed change of every board; returns the unsubscriber. */
  onBoardChange(listener: (change: BoardChange) => void): () => void;
  /** What bounds the writes of `agentId` (the write guard's loader asks once per writing call). */
  writeBounds(tenantId: string, agentId: string): Promise<WriteBounds>;
  /**
   * The agent was deleted: its unfinished tasks go back to pending and unowned (each a `release`
   * by it), so the team can claim them; a deleted agent could never complete or release them.
   * Never rejects: failures go to onError.
   */
  releaseOwner(agentId: string): Promise<void>;
}

export function createTeamBoard(options: TeamBoardOptions): TeamBoard {
  const s: BoardState = {
    options,
    store: options.store,
    events: options.events,
    directory: options.directory ?? soloDirectory,
    now: options.now ?? Date.now,
    listeners: new Set<(change: BoardChange) => void>(),
  };
  return {
    forAgent: (tenantId, agentId) => forAgent(s, tenantId, agentId),
    onBoardChange(listener) {
      s.listeners.add(listener);
      return () => s.listeners.delete(listener);
    },
    releaseOwner: (agentId) => releaseOwner(s, agentId),
    writeBounds: (tenantId, agentId) => writeBounds(s, tenantId, agentId),
  };
}

async function writeBounds(s: BoardState, tenantId: string, agentId: string): Promise<WriteBounds> {
  const { store } = s;
  const held = (await store.scopedHeldBy(tenantId, agentId)).map((t) => ({
    taskId: t.id,
    subject: t.subject,
    scopes: t.writeScopes,
  }));
  const above = await s.directory.ancestors(agentId);
  // An ancestor is gone (its deletion is under way): what it may write is unknown, so nothing.
  if (above === undefined) return { held, grants: [], broken: true };
  // One read per ancestor, all in flight together; the order of the list is kept.
  const chain = [agentId, ...above];
  const scopes = await Promise.all(chain.map((id) => store.grantOf(tenantId, id)));
  const grants = chain.flatMap((id, i) => {
    const own = scopes[i];
    return own === undefined ? [] : [{ agentId: id, own: id === agentId, scopes: own }];
  });
  return { held, grants };
}
