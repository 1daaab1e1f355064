// Progress of one batch: the session events that belong to it, forwarded as they are appended.
// An event belongs to the batch when its call is one of the batch's calls, or an inner call whose
// parent already belongs (programs calling tools, which may call tools…); host request events
// carry the call id of the call that waits on them.
import type { EventLog, SessionEvent } from '../store/types.ts';
import type { ToolCall } from '../tools/types.ts';

export const trackBatch = (
  events: EventLog,
  sessionId: string,
  calls: readonly ToolCall[],
  onEvent: (event: SessionEvent) => void,
): (() => void) => {
  const ids = new Set(calls.map((c) => c.id));
  return events.subscribe(sessionId, (event) => {
    if (event.parentCallId !== undefined && ids.has(event.parentCallId) && event.callId !== undefined)
      ids.add(event.callId);
    if (event.callId === undefined || !ids.has(event.callId)) return;
    try {
      onEvent(event);
    } catch {
      // A failing progress consumer (a closed stream) must not affect the batch.
    }
  });
};
