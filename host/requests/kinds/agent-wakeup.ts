// `agent_wakeup`: the teammate wake-up. An agent that is idle (no calls in flight, no run pending)
// got work in its mailbox (followup_task, or input a parent sent a finished child): the service
// makes this request on the idle agent's own session, and the client runs a new turn of that
// agent's loop with `message` (and whatever else its mailbox holds), then answers `{ result }`
// (the turn's final text: for a child, what its parent is told) or `{ error }`. Nobody in the
// service blocks on it; an unanswered one expires like every request.
import * as v from 'valibot';
import { ErrorAnswer, OutputAnswer, ResultAnswer } from '../answers.ts';
import { defineRequestKind } from '../kind.ts';

export const agentWakeupKind = defineRequestKind({
  name: 'agent_wakeup',
  payload: v.object({
    /** The agent to run: the request's own agent. */
    agentId: v.string(),
    /** Who sent the work (an agent id) and its name in the team, when it has one. */
    from: v.string(),
    fromName: v.optional(v.string()),
    /** The mailbox item that woke it (GET /v1/agents/:id/mailbox lists it). */
    mailboxId: v.number(),
    message: v.string(),
    /** `followup` (followup_task) or `message` (send_message to a finished child). */
    reason: v.picklist(['followup', 'message']),
  }),
  answers: [ResultAnswer, ErrorAnswer, OutputAnswer],
  wrongAnswer: 'Answer a wake-up with { "result": "<final text of the turn>" } or { "error": … }.',
  // The teams service watches the request itself (its outcome settles the child's run).
  settle: (settlement) => settlement.state,
});
