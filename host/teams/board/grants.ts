// Write grants: what a teammate's team lead has let it write, kept per agent (store:
// team_write_grants) so that it outlives the tasks that gave it. The rules, pure, run by the board
// inside the transaction of the change that causes them:
// - Only the lead gives a task write_scopes (rules.ts), so every scope a grant holds is the lead's.
// - A teammate that comes to hold a scoped task (claims it, or is handed it in progress) while it
//   has no grant gets one: that task's scopes. From then on it is confined for as long as it lives.
// - Only the lead widens a grant: reassigning a scoped task to the teammate, or editing the
//   write_scopes of a task the teammate owns, adds those scopes. Nothing the teammate does (release,
//   complete, claim another task, create one, edit one) widens or drops it; claiming another scoped
//   task only narrows its writes further while it holds that task (guard.ts).
// - The lead itself is never granted anything: it is the one who grants (its own held tasks still
//   confine it while it holds them, by its own choice).
// Invariant: an agent's grant only ever changes by the lead's act, or from none to its first task's.
import { SandboxError } from '../../errors.ts';
import type { Actor, UpdateInput } from './rules.ts';
import type { BoardLimits, TeamTaskRecord } from './types.ts';

/** Scopes one grant may hold: a handful of tasks' worth. */
export const grantLimit = (limits: BoardLimits): number => 4 * limits.maxScopesPerTask;

/**
 * The grant of `after.owner` once `input` (by `actor`) made `after`; undefined when it does not
 * change. `current` is the owner's grant before.
 */
export function grantAfter(
  after: TeamTaskRecord,
  input: UpdateInput,
  actor: Actor,
  current: readonly string[] | undefined,
  limits: BoardLimits,
): string[] | undefined {
  const owner = after.owner;
  if (owner === undefined || owner === actor.lead || after.writeScopes.length === 0) return undefined;
  const byLead = actor.id === actor.lead;
  const assigns =
    byLead && (input.action === 'reassign' || (input.action === 'edit' && input.write_scopes !== undefined));
  if (assigns) {
    const wider = [...new Set([...(current ?? []), ...after.writeScopes])];
    if (current !== undefined && wider.length === current.length) return undefined;
    if (wider.length > grantLimit(limits))
      throw new SandboxError(
        'LIMIT_EXCEEDED',
        `Agent ${owner} may already write ${current?.length ?? 0} scopes; adding task ${after.id}'s would make ${wider.length}, more than the ${grantLimit(limits)} one teammate's grant holds. Give the task to another teammate.`,
        { data: { agentId: owner, limit: grantLimit(limits) } },
      );
    return wider;
  }
  if (current === undefined && after.status === 'in_progress') return [...after.writeScopes];
  return undefined;
}
