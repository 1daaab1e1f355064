// The log's unfinished calls: every `tool.call` with no `tool.result` after it, what the repair
// after a crash settles (host/tools/interrupted.ts). The backend names the candidate sessions from
// the open-call counter its writes keep (`sessions.open_calls`) and reads only their call and
// result rows (callRows); this module matches them, the same for every backend.
// Invariants: everything appended before the question is written first, so the counter and the rows
// are the durable truth; results follow their call (host/tools/pipeline.ts logs no result for a call
// it did not record), and a call id may repeat in one session (clients choose ids): in seq order, a
// result closes the earliest call still open with its id; a result with no open call closes nothing.
import type { JsonValue } from '../json.ts';
import { answer, settled } from './event-log-load.ts';
import type { EventRow } from './event-log-port.ts';
import { flush } from './event-log-queue.ts';
import type { LogState } from './event-log-state.ts';
import type { UnfinishedCall } from './types.ts';

/** A call row as an unfinished call; name and provenance from its data (small: never payloads). */
function unfinished(row: EventRow & { callId: string }): UnfinishedCall {
  let data: { name?: unknown; provenance?: JsonValue } = {};
  try {
    data = JSON.parse(row.data) as typeof data;
  } catch {
    // A stored row always holds JSON; an unreadable one still gets its result.
  }
  const call: UnfinishedCall = {
    sessionId: row.sessionId,
    seq: row.seq,
    callId: row.callId,
    name: typeof data.name === 'string' ? data.name : '',
    surface: row.surface,
    parentCallId: row.parentCallId,
    at: row.at,
  };
  if (data.provenance !== undefined) call.provenance = data.provenance;
  return call;
}

/** Matches rows (by session, then seq) into the calls left open, in the same order. */
export function matchCalls(rows: readonly EventRow[]): UnfinishedCall[] {
  const out: UnfinishedCall[] = [];
  let session: string | undefined;
  // Per call id, the open calls of the current session, earliest first.
  let open = new Map<string, (EventRow & { callId: string })[]>();
  const close = () => {
    const left = [...open.values()].flat().sort((a, b) => a.seq - b.seq);
    for (const row of left) out.push(unfinished(row));
  };
  for (const row of rows) {
    if (row.sessionId !== session) {
      close();
      open = new Map();
      session = row.sessionId;
    }
    if (row.callId === undefined) continue;
    const calls = open.get(row.callId);
    if (row.type === 'tool.call') {
      const call = row as EventRow & { callId: string };
      if (calls === undefined) open.set(row.callId, [call]);
      else calls.push(call);
    } else if (row.type === 'tool.result' && calls !== undefined) {
      calls.shift();
      if (calls.length === 0) open.delete(row.callId);
    }
  }
  close();
  return out;
}

export async function unfinishedCalls(
  s: LogState,
  options: { sessionIds?: readonly string[] } = {},
): Promise<UnfinishedCall[]> {
  await flush(s);
  const ids = options.sessionIds;
  if (ids !== undefined && ids.length === 0) return [];
  return settled(s, () => matchCalls(answer(s, 'callRows', () => s.backend.callRows(ids))));
}
