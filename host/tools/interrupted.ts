// The repair after a crash: every call the log holds without a result (its process stopped while
// it ran: kill -9, a power cut, a replica that lost its family) gets one `tool.result` saying so,
// error INTERRUPTED, shaped as the pipeline's own (call-log.ts resultEvent: the call's surface,
// parent and provenance), and the pending host requests those calls waited on are cancelled
// (nobody waits for them any more; an answer could change nothing). Runs at start for every
// session (host/serve.ts) and, at a fail-over, for the sessions of the family taken over.
// Invariants: every logged call ends with exactly one result: the store names only the calls
// without one (events.unfinishedCalls), so a second run appends nothing; inner calls are settled
// before their parent (as they would have ended), the rest in call order; one append per session.
// The caller runs it only for sessions no call of any process is running in (at start, before the
// API takes requests; at a fail-over, before the family's calls are served), one run at a time:
// where replicas share a database, a replica repairs only the families it takes, never at start
// for every session.
import type { JsonValue } from '../json.ts';
import type { RequestStore } from '../requests/port.ts';
import type { EventLog, EventRepairs, SessionEventInput, UnfinishedCall } from '../store/types.ts';
import { resultEvent } from './call-log.ts';
import { errorContent } from './content.ts';
import { fail } from './outcomes.ts';
import type { CallProvenance } from './types.ts';

export const INTERRUPTED_MESSAGE =
  'The call was interrupted: the service stopped while it ran (a restart or a fail-over); it may or may not have taken effect.';

export interface RepairOptions {
  /** Only these sessions (a family taken over at a fail-over). Default: every session. */
  sessionIds?: readonly string[];
  /** Cancels the pending host requests the interrupted calls waited on. Default: none touched. */
  requests?: Pick<RequestStore, 'list' | 'cancel'>;
}

/** What one repair did. */
export interface RepairReport {
  /** Calls given an INTERRUPTED result. */
  calls: number;
  /** Sessions they were in. */
  sessions: number;
  /** Pending host requests of theirs cancelled. */
  requests: number;
}

/** One session's unfinished calls (in seq order) with every call after all of its inner calls. */
export function settleOrder(calls: readonly UnfinishedCall[]): UnfinishedCall[] {
  const inner = new Map<UnfinishedCall, UnfinishedCall[]>();
  const roots: UnfinishedCall[] = [];
  // A parent is the latest open call with its id before the inner call (call ids may repeat).
  const latest = new Map<string, UnfinishedCall>();
  for (const call of calls) {
    const parent = call.parentCallId === undefined ? undefined : latest.get(call.parentCallId);
    if (parent === undefined) roots.push(call);
    else inner.get(parent)?.push(call);
    inner.set(call, []);
    latest.set(call.callId, call);
  }
  const out: UnfinishedCall[] = [];
  const visit = (call: UnfinishedCall): void => {
    for (const child of inner.get(call) ?? []) visit(child);
    out.push(call);
  };
  for (const root of roots) visit(root);
  return out;
}

const provenanceOf = (value: JsonValue | undefined): CallProvenance | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as unknown as CallProvenance)
    : undefined;

/** The `tool.result` an interrupted call ends with. */
export function interruptedResult(call: UnfinishedCall): SessionEventInput {
  const event = resultEvent(
    call.sessionId,
    {
      id: call.callId,
      name: call.name,
      ok: false,
      content: errorContent(INTERRUPTED_MESSAGE),
      error: fail('INTERRUPTED', INTERRUPTED_MESSAGE),
      // How long it ran before the service stopped is not known.
      durationMs: 0,
    },
    call.parentCallId,
    provenanceOf(call.provenance),
  );
  event.surface = call.surface;
  return event;
}

/** Cancels the session's pending requests made by one of its interrupted calls; how many. */
async function cancelRequests(
  requests: Pick<RequestStore, 'list' | 'cancel'>,
  sessionId: string,
  calls: readonly UnfinishedCall[],
): Promise<number> {
  let cancelled = 0;
  for (const request of await requests.list(sessionId, 'pending')) {
    // Made by the call (after it was logged), not by an earlier call that reused its id.
    const made = calls.some((c) => c.callId === request.callId && request.createdAt >= c.at);
    if (made && (await requests.cancel(request.id))) cancelled++;
  }
  return cancelled;
}

/** Settles every unfinished call of the log (of `sessionIds` when given); what it did. */
export async function repairInterruptedCalls(
  events: Pick<EventLog, 'append'> & EventRepairs,
  options: RepairOptions = {},
): Promise<RepairReport> {
  const query = options.sessionIds === undefined ? {} : { sessionIds: options.sessionIds };
  const bySession = new Map<string, UnfinishedCall[]>();
  for (const call of await events.unfinishedCalls(query)) {
    const calls = bySession.get(call.sessionId);
    if (calls === undefined) bySession.set(call.sessionId, [call]);
    else calls.push(call);
  }
  const report: RepairReport = { calls: 0, sessions: bySession.size, requests: 0 };
  for (const [sessionId, calls] of bySession) {
    if (options.requests !== undefined)
      report.requests += await cancelRequests(options.requests, sessionId, calls);
    await events.append(settleOrder(calls).map(interruptedResult));
    report.calls += calls.length;
  }
  return report;
}

/** The one log line a repair that did something is worth; undefined when it did nothing. */
export function repairLine(report: RepairReport): string | undefined {
  if (report.calls === 0) return undefined;
  const requests =
    report.requests === 0 ? '' : ` (and cancelled ${report.requests} pending requests of theirs)`;
  return `repaired ${report.calls} interrupted calls in ${report.sessions} sessions${requests}`;
}

/** Settles every unfinished call (of `sessionIds` when given) as INTERRUPTED; resolves to how many. */
export async function repairInterrupted(
  events: Pick<EventLog, 'append'> & EventRepairs,
  options: RepairOptions = {},
): Promise<number> {
  return (await repairInterruptedCalls(events, options)).calls;
}
