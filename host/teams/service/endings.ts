// How a child's run ends from the service's side, besides its run request settling on its own
// (runs.ts): the child reports, or the child is deleted.
// Invariants: a report settles a running run as completed and answers the parent's pending run
// request with it (a wake-up request stays for the client); a deleted agent's unread mail is
// cancelled and its running run ends as cancelled, through its request's watch when it has one.
import type { Agent } from '../../agents/types.ts';
import { SandboxError } from '../../errors.ts';
import type { ChildStatus } from '../../store/index.ts';
import { checkBytes, type TeamState } from './state.ts';

/** report(output): sets a child's output for its parent and ends its run. */
export async function report(
  state: TeamState,
  child: Agent,
  output: string,
): Promise<{ parent_id: string; status: ChildStatus }> {
  const { requests, teams, runs } = state;
  const run = await teams.run(child.id);
  if (run === undefined)
    throw new SandboxError(
      'TOOL_FAILED',
      'report is for child agents; this agent has no parent to report to.',
    );
  checkBytes(state, child.tenantId, output, 'report');
  if (run.status === 'running') {
    await runs.settle(child.id, run.requestId, { status: 'completed', output });
    // The run request on the parent's session is answered with the report; a wake-up request
    // stays for the client to answer when its turn ends.
    const request = run.requestId === undefined ? undefined : await requests.get(run.requestId);
    if (request?.kind === 'subagent' && request.state === 'pending')
      await requests.answer(request.id, { result: output });
  } else await runs.reportIdle(run, output);
  return { parent_id: run.parentId, status: 'completed' };
}

/** The agent was deleted: its run is cancelled (its parent told), its unread mail cancelled. */
export async function deleted(state: TeamState, agent: Pick<Agent, 'id'>): Promise<void> {
  const { requests, teams, runs } = state;
  await teams.cancelPending(agent.id);
  const run = await teams.run(agent.id);
  if (run?.status !== 'running') return;
  // Cancelling the request settles the run through its watch; without one, settle it here.
  if (run.requestId === undefined || !(await requests.cancel(run.requestId)))
    await runs.settle(agent.id, run.requestId, { status: 'cancelled' });
}
