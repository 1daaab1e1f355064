// What a tenant key does to an agent's sandbox outside the tool pipeline, in the agent's durable
// log: a command run (POST /exec), a file written, uploaded or deleted, a terminal opened or closed.
// Each action is two events that share the callId `client:<uuid>`: `client.<action>` with what was
// asked, written and flushed BEFORE the action starts, then `client.result` with how it ended
// (`ok`, and the error code or the action's own facts). Both are `log-only`: the audit timeline
// shows them, the model's history does not.
// Invariants: an action whose first event the log refuses (STORE_BUDGET_EXCEEDED, a failing store)
// does not happen, so nothing a client did to a sandbox is missing from its log; `client.result`
// settles an admitted action and is kept even past the budget (host/store SETTLING_TYPES). Secrets a
// client passes (environment values, stdin, file bytes) are never logged, only their names or sizes.
import { randomUUID } from 'node:crypto';
import type { Agent } from '../agents/types.ts';
import { isSandboxError } from '../errors.ts';
import type { JsonValue } from '../json.ts';
import type { EventLog } from '../store/types.ts';

/** The client actions the log records; `client.<action>` is the type of each one's first event. */
export type ClientAction =
  | 'exec'
  | 'file_write'
  | 'archive_upload'
  | 'file_delete'
  | 'terminal_open'
  | 'terminal_close';

export type AuditFacts = Record<string, JsonValue>;

/** Records how an action ended; `callId` is the one both its events share (a checkpoint's too). */
export type AuditEnd = ((outcome: AuditOutcome) => Promise<void>) & { readonly callId: string };

/** How an action ended: done (with its facts), or failed with an error. */
export type AuditOutcome = { ok: true; facts?: AuditFacts } | { ok: false; error: unknown };

export interface ClientAudit {
  /**
   * Records that the client starts `action` (durable once this resolves; rejects, and the action
   * must not run, when the log refuses it) and returns the function that records its end.
   */
  begin(agent: Agent, action: ClientAction, facts: AuditFacts): Promise<AuditEnd>;
  /** begin, `work`, and its end recorded from what `work` resolved to (via `facts`) or threw. */
  run<T>(
    agent: Agent,
    action: ClientAction,
    facts: AuditFacts,
    work: () => Promise<T>,
    resultFacts?: (value: T) => AuditFacts,
  ): Promise<T>;
}

const errorFacts = (error: unknown): AuditFacts =>
  isSandboxError(error)
    ? { code: error.code, message: error.message.slice(0, 500) }
    : { code: 'INTERNAL', message: 'Internal error' };

export function createClientAudit(events: EventLog): ClientAudit {
  async function begin(agent: Agent, action: ClientAction, facts: AuditFacts) {
    const callId = `client:${randomUUID()}`;
    const base = { sessionId: agent.sessionId, surface: 'log-only' as const, callId };
    await events.append([{ ...base, type: `client.${action}`, data: facts }]);
    await events.flush();
    const end = async (outcome: AuditOutcome): Promise<void> => {
      const data: AuditFacts = outcome.ok
        ? { action, ok: true, ...outcome.facts }
        : { action, ok: false, error: errorFacts(outcome.error) };
      await events.append([{ ...base, type: 'client.result', data }]);
      await events.flush();
    };
    return Object.assign(end, { callId });
  }

  async function run<T>(
    agent: Agent,
    action: ClientAction,
    facts: AuditFacts,
    work: () => Promise<T>,
    resultFacts?: (value: T) => AuditFacts,
  ): Promise<T> {
    const end = await begin(agent, action, facts);
    let value: T;
    try {
      value = await work();
    } catch (error) {
      // The action's own error is what the client needs; a log that fails now cannot replace it.
      await end({ ok: false, error }).catch(() => undefined);
      throw error;
    }
    await end({ ok: true, ...(resultFacts === undefined ? {} : { facts: resultFacts(value) }) });
    return value;
  }

  return { begin, run };
}
