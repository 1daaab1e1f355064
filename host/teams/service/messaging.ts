// What agents do to each other through the service: send a message (posted to the target's
// mailbox, and waking the target when it is idle), wait for messages, and interrupt a reachable
// agent's calls (reach.ts decides which agents those are).
// Invariants: a message is posted before any wake-up is created for it; a wake-up is created only
// for an idle target (no calls running, no run or wake-up pending), so one message never starts two
// turns (the idle check and the wake-up run one at a time per target: the reads are asynchronous);
// waking a child marks its run as running again and watches the new request (runs.ts); a target
// deleted meanwhile keeps none of it (read after the writes: dropIfDeleted).
import type { Agent } from '../../agents/types.ts';
import { SandboxError } from '../../errors.ts';
import type { AgentRecord, MailItem } from '../../store/index.ts';
import { deleted } from './endings.ts';
import { resolve } from './reach.ts';
import { exclusive, messageViews, nameOf, type TeamState } from './state.ts';
import type { MessageView, Reach } from './types.ts';

/** No calls of it run, no run or wake-up of it is pending: a message would wait unread. */
async function idle(state: TeamState, target: AgentRecord): Promise<boolean> {
  if (state.options.busy(target.id)) return false;
  if ((await state.teams.run(target.id))?.status === 'running') return false;
  return !(await state.requests.list(target.id, 'pending')).some((r) => r.kind === 'agent_wakeup');
}

async function wake(state: TeamState, target: AgentRecord, item: MailItem, callId: string): Promise<void> {
  const { teams } = state;
  const fromName = await nameOf(state, item.fromId);
  const request = await state.requests.create({
    sessionId: target.id,
    kind: 'agent_wakeup',
    callId,
    payload: {
      agentId: target.id,
      from: item.fromId,
      ...(fromName === undefined ? {} : { fromName }),
      mailboxId: item.id,
      message: item.body,
      reason: item.kind === 'followup' ? 'followup' : 'message',
    },
    expiresAt: state.now() + state.limits(target.tenantId).runTtlMs,
  });
  const run = await teams.run(target.id);
  if (run === undefined) return; // a lead: nothing of it is a run its parent waits on
  const { updatedAt: _u, requestId: _r, output: _o, ...rest } = run;
  await teams.putRun({
    ...rest,
    ...(run.output === undefined ? {} : { output: run.output }),
    status: 'running',
    requestId: request.id,
  });
  state.runs.watch(target.id, request);
}

export async function send(
  state: TeamState,
  from: Agent,
  target: string,
  message: string,
  how: { reach: Reach; kind: 'message' | 'followup'; wake: boolean; callId: string },
): Promise<{ message_id: number; agent_id: string; woke: boolean }> {
  const to = await resolve(state, from, target, how.reach);
  const fromName = await nameOf(state, from.id);
  const item = await state.mailboxes.post(
    { tenantId: from.tenantId, agentId: to.id, fromId: from.id, kind: how.kind, body: message },
    fromName,
  );
  const woke =
    how.wake &&
    (await exclusive(state.waking, to.id, async () => {
      if (!(await idle(state, to))) return false;
      await wake(state, to, item, how.callId);
      return true;
    }));
  await dropIfDeleted(state, to);
  return { message_id: item.id, agent_id: to.id, woke };
}

/**
 * The target deleted while the message was under way: its deletion may have cancelled its mail
 * and ended its run before the message, its wake-up and its run were stored. Read after the
 * writes, so whichever comes second sees the other; what came late goes as the deletion's would.
 */
async function dropIfDeleted(state: TeamState, to: AgentRecord): Promise<void> {
  if ((await state.agents.get(to.tenantId, to.id)) !== undefined) return;
  await deleted(state, to);
  for (const request of await state.requests.list(to.id, 'pending')) await state.requests.cancel(request.id);
  throw new SandboxError('NOT_FOUND', `Agent ${to.id} was deleted.`, { data: { agentId: to.id } });
}

/** Takes the agent's unread messages, waiting for one up to `timeoutMs` (cut to the tenant's most). */
export async function wait(
  state: TeamState,
  agent: Agent,
  timeoutMs: number | undefined,
  signal: AbortSignal,
): Promise<{ messages: MessageView[]; timed_out: boolean }> {
  const max = state.limits(agent.tenantId).waitMaxMs;
  const items = await state.mailboxes.wait(agent.id, Math.min(timeoutMs ?? max, max), signal);
  return {
    messages: await messageViews(state, items),
    timed_out: items.length === 0,
  };
}

export async function interrupt(
  state: TeamState,
  by: Agent,
  target: string,
  reach: Reach,
): Promise<{ agent_id: string; interrupted_batches: number }> {
  const to = await resolve(state, by, target, reach);
  const byName = await nameOf(state, by.id);
  const stopped = state.options.interrupt(to.id, by.id);
  await state.events.append([
    {
      sessionId: to.id,
      type: 'agent.interrupted',
      surface: 'current',
      data: { by: by.id, ...(byName === undefined ? {} : { byName }), batches: stopped },
    },
  ]);
  return { agent_id: to.id, interrupted_batches: stopped };
}
