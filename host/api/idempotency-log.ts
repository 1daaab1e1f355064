// A call batch's results as its session log tells them, for a key whose batch never settled (its
// process crashed, or lost the agent in a fail-over): read once, nothing is run. For each call of
// the batch, its logged root `tool.result`, else an INTERRUPTED result (not run, or run with its
// outcome unknown). Invariants: only events after the seq the claim recorded are read, and a call
// id is matched to the first root `tool.call` of that id there and then to the first root
// `tool.result` after it (call ids are unique within a batch but repeat across batches, so a later
// batch reusing an id is never taken for this one); the answer has one result per call, in call order.
import type { JsonValue } from '../json.ts';
import type { EventLog } from '../store/types.ts';
import { answerBudget } from '../tools/answer-budget.ts';
import type { ContentPart, ToolCall, ToolResult } from '../tools/types.ts';

/** Events read per page while looking for the batch's results. */
const PAGE = 1000;

function interrupted(call: ToolCall, logged: boolean): ToolResult {
  const message = logged
    ? `The service stopped while ${call.name} ran (a crash or a fail-over) and its result was not recorded; ` +
      'it was not run again. Check its effect before running it under a new key.'
    : `The service stopped before ${call.name} was recorded as started; it was not run again. ` +
      'Run it under a new key if it is still wanted.';
  return {
    id: call.id,
    name: call.name,
    ok: false,
    content: [{ type: 'text', text: `Error: ${message}` }],
    error: { code: 'INTERRUPTED', message, data: { logged } },
    durationMs: 0,
  };
}

type ResultData = { [key: string]: JsonValue | undefined };

function loggedResult(id: string, data: ResultData): ToolResult {
  const result: ToolResult = {
    id,
    name: String(data.name),
    ok: data.ok === true,
    content: (data.content ?? []) as unknown as ContentPart[],
    durationMs: typeof data.durationMs === 'number' ? data.durationMs : 0,
  };
  if (data.value !== undefined) result.value = data.value;
  if (data.error !== undefined) result.error = data.error as unknown as ToolResult['error'];
  if (data.redacted === true) result.redacted = true;
  if (data.attempts !== undefined) result.attempts = data.attempts as unknown as ToolResult['attempts'];
  return result;
}

/** The batch's results from the log of `sessionId` after `afterSeq`. */
export async function resultsFromLog(
  events: EventLog,
  sessionId: string,
  afterSeq: number,
  calls: readonly ToolCall[],
): Promise<ToolResult[]> {
  const wanted = new Map(calls.map((c) => [c.id, c]));
  const callOf = (id: string) => wanted.get(id) as ToolCall;
  const started = new Set<string>();
  const results = new Map<string, ToolResult>();
  // The batch's answer budget, as its first answer had it (tools/answer-budget.ts): results are
  // logged in call order, so a batch whose calls ran one after another answers the same again.
  const budget = calls.length > 1 ? answerBudget() : undefined;
  const taken = (result: ToolResult): ToolResult => (budget === undefined ? result : budget.take(result));
  let cursor = afterSeq;
  while (results.size < wanted.size) {
    const page = await events.list(sessionId, { afterSeq: cursor, limit: PAGE });
    for (const e of page) {
      if (e.parentCallId !== undefined || e.callId === undefined || !wanted.has(e.callId)) continue;
      if (results.has(e.callId)) continue;
      if (e.type === 'tool.call') {
        // A second call of the id before a result: a later batch reusing it; this one's ended unrecorded.
        if (started.has(e.callId)) results.set(e.callId, interrupted(callOf(e.callId), true));
        else started.add(e.callId);
      } else if (e.type === 'tool.result' && started.has(e.callId))
        results.set(e.callId, taken(loggedResult(e.callId, e.data as ResultData)));
    }
    if (page.length < PAGE) break;
    cursor = (page.at(-1) as { seq: number }).seq;
  }
  return calls.map((call) => results.get(call.id) ?? interrupted(call, started.has(call.id)));
}
