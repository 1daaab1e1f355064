// A deleted agent's unfinished tasks go back to the team: pending and unowned, each a `release`
// by it. Run by the agent's deletion (after its stamp) and again by a write that stored an owner
// the directory no longer has (agent-board.ts): whichever comes second sees the other.
import { boardOf, ownerGone, viewOf } from './rules.ts';
import { type BoardState, told } from './state.ts';

export async function releaseOwner(s: BoardState, agentId: string): Promise<void> {
  const { store, now } = s;
  // Called from a delete, which must not fail for it: failures go to onError.
  try {
    for (const { tenantId, teamId } of await store.boardsOwning(agentId)) {
      const released = await store.write(tenantId, teamId, (tx) => {
        const before = tx.tasks();
        const gone = new Set(
          before.filter((t) => t.owner === agentId && t.status !== 'completed').map((t) => t.id),
        );
        const after = before.map((t) => (gone.has(t.id) ? ownerGone(t, now()) : t));
        const board = boardOf(after);
        const changed = after.filter((t) => gone.has(t.id));
        for (const task of changed) tx.update(task);
        return changed.map((t) => viewOf(t, board));
      });
      for (const task of released) told(s, { tenantId, teamId, action: 'release', by: agentId, task });
    }
  } catch (error) {
    s.options.onError?.(error);
  }
}
