// The event fence of one replica (host/store's EventFence): which families it holds and in which
// epoch, and which family each session it has served belongs to. The event log asks it once per
// appended row (tokenOf: two map lookups) and tells it which families' rows a write found lost.
// Invariants: a family is held in at most one epoch at a time; a session bound to a family this
// replica does not hold (never took, or lost) gets 'lost' and writes nothing; a session never
// bound (no agent of a family served here) is not fenced; a loss is told to `onLost` once per
// holding, whoever notices it first (the lease renewal, or the database refusing a write).
import type { EventFence, FenceToken } from '../store/event-log-port.ts';

export interface ReplicaFence extends EventFence {
  /** Whether the family is held now (in any epoch). */
  holds(familyId: string): boolean;
  /** The family's token while held. */
  tokenOfFamily(familyId: string): FenceToken | undefined;
  /** Holds the family in `epoch` from now on. */
  hold(familyId: string, epoch: number): void;
  /** The session's events belong to the family. */
  bind(sessionId: string, familyId: string): void;
  /** The sessions bound to the family. */
  sessionsOf(familyId: string): string[];
  /** The families held now. */
  held(): string[];
  /** Forgets a family that is gone (deleted whole): not held, its sessions unbound, no loss told. */
  forget(familyId: string): void;
  /** Called once per lost holding, with the family's sessions. */
  onLost(listener: (familyId: string, sessionIds: readonly string[]) => void): void;
  /** How admits() learns whether a held family's hold is confirmed lately (ownership.ts). Default: always. */
  freshness(check: (familyId: string) => boolean): void;
}

export const createFence = (replicaId: string): ReplicaFence => {
  const held = new Map<string, FenceToken>();
  const familyOf = new Map<string, string>();
  const members = new Map<string, Set<string>>();
  const listeners: ((familyId: string, sessionIds: readonly string[]) => void)[] = [];
  let fresh: (familyId: string) => boolean = () => true;
  const sessionsOf = (familyId: string) => [...(members.get(familyId) ?? [])];

  const lose = (familyId: string): void => {
    if (!held.delete(familyId)) return;
    const sessions = sessionsOf(familyId);
    for (const listener of listeners) listener(familyId, sessions);
  };

  return {
    replicaId,
    tokenOf(sessionId) {
      const familyId = familyOf.get(sessionId);
      if (familyId === undefined) return undefined;
      return held.get(familyId) ?? 'lost';
    },
    lost(familyIds) {
      for (const familyId of familyIds) lose(familyId);
    },
    admits(sessionId) {
      const familyId = familyOf.get(sessionId);
      if (familyId === undefined) return true;
      return held.has(familyId) && fresh(familyId);
    },
    freshness(check) {
      fresh = check;
    },
    holds: (familyId) => held.has(familyId),
    tokenOfFamily: (familyId) => held.get(familyId),
    hold(familyId, epoch) {
      const now = held.get(familyId);
      if (now?.epoch === epoch) return;
      held.set(familyId, { familyId, epoch });
    },
    bind(sessionId, familyId) {
      const before = familyOf.get(sessionId);
      if (before === familyId) return;
      if (before !== undefined) members.get(before)?.delete(sessionId);
      familyOf.set(sessionId, familyId);
      let set = members.get(familyId);
      if (set === undefined) {
        set = new Set();
        members.set(familyId, set);
      }
      set.add(sessionId);
    },
    sessionsOf,
    held: () => [...held.keys()],
    forget(familyId) {
      held.delete(familyId);
      for (const sessionId of members.get(familyId) ?? []) familyOf.delete(sessionId);
      members.delete(familyId);
    },
    onLost(listener) {
      listeners.push(listener);
    },
  };
};
