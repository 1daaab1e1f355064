// The live event stream of GET /v1/agents/:id/events (./events.ts): everything after the resume
// point replayed, then new events followed as they become durable, ended by the agent's deletion
// (`deleted`) or the service's shutdown (`shutdown`), with `: ping` heartbeats meanwhile.
// Invariants: no event is skipped or repeated between replay and live (both read the log after the
// last seq sent; notifications only say how far the durable log reaches); every read is bounded in
// count and in bytes (eventPage, at least one event).
import type { Context } from 'hono';
import type { SSEStreamingApi } from 'hono/streaming';
import type { AgentService } from '../../agents/service.ts';
import { SandboxError } from '../../errors.ts';
import type { EventLog, EventPayloads } from '../../store/types.ts';
import type { ApiEnv } from '../env.ts';
import type { Lifecycle } from '../lifecycle.ts';
import { eventView } from './calls.ts';

const HEARTBEAT_MS = 15_000;

/** What eventRoutes serves its pages and streams from. */
export interface EventRoutesState {
  agents: AgentService;
  events: EventLog & EventPayloads;
  lifecycle: Lifecycle;
  /** Byte bound of a page and of every read of a stream (ApiLimits.eventPageBytes). */
  pageBytes: number;
}

/**
 * Where the session's kept log starts (1 until retention removed events). A resume point older
 * than that (`after` > 0 and below firstSeq - 1) answers LOG_TRUNCATED instead of skipping the
 * removed events silently; `after=0` reads from the first kept event.
 */
export async function keptFrom(state: EventRoutesState, sessionId: string, after: number): Promise<number> {
  const firstSeq = (await state.events.firstSeq?.(sessionId)) ?? 1;
  if (after > 0 && after < firstSeq - 1)
    throw new SandboxError(
      'LOG_TRUNCATED',
      `Events ${after + 1} to ${firstSeq - 1} of this log were removed by its retention; the kept log starts at seq ${firstSeq}: resume with after=${firstSeq - 1}.`,
      { data: { after, firstSeq } },
    );
  return firstSeq;
}

/** The events after `afterSeq`: at most `limit` of them and about pageBytes bytes (at least one). */
export function eventPage(state: EventRoutesState, sessionId: string, afterSeq: number, limit: number) {
  // Durable only: a seq shown to a client is never handed out again (a crash, a fail-over), and the
  // routes flush first, so what was appended before the request is in it.
  return state.events.list(sessionId, {
    afterSeq,
    limit,
    maxBytes: state.pageBytes,
    payloads: 'refs',
    durable: true,
  });
}

/** Streams the events of `sessionId` after seq `from` on `stream` until it closes, the agent is deleted or the service stops. */
export async function followEvents(
  state: EventRoutesState,
  c: Context<ApiEnv>,
  stream: SSEStreamingApi,
  sessionId: string,
  from: number,
): Promise<void> {
  const { agents, events, lifecycle } = state;
  let last = from;
  /** How far the durable log reaches, as notified (live events are sent only once durable). */
  let durable = 0;
  let wake: (() => void) | undefined;
  const unsubscribe = events.subscribe(sessionId, (event) => {
    durable = Math.max(durable, event.seq);
    wake?.();
  });
  /** Set when the agent is deleted: its stream ends (with a `deleted` message) like its calls. */
  let deleted = false;
  let stopWatching = () => {};
  const done = new Promise<void>((resolve) => {
    const finish = () => resolve();
    lifecycle.signal.addEventListener('abort', finish, { once: true });
    stream.onAbort(finish);
    c.req.raw.signal.addEventListener('abort', finish, { once: true });
    stopWatching = agents.onDeleted(c.get('agent'), () => {
      deleted = true;
      finish();
    });
  });
  /** Set when retention removed events this stream had not sent yet: it ends, never skipping them. */
  let overtaken: number | undefined;
  const closed = () =>
    stream.aborted ||
    c.req.raw.signal.aborted ||
    lifecycle.shuttingDown ||
    deleted ||
    overtaken !== undefined;
  /** Sends every event after `last` up to `upTo`, one bounded page at a time. */
  const catchUp = async (upTo: number) => {
    while (!closed()) {
      const batch = (await eventPage(state, sessionId, last, 1000)).filter((e) => e.seq <= upTo);
      if (batch.length === 0) return;
      if (last > 0 && batch[0]!.seq !== last + 1) {
        overtaken = batch[0]!.seq;
        return;
      }
      for (const event of batch) {
        last = event.seq;
        await stream.writeSSE({
          event: 'event',
          id: String(event.seq),
          data: JSON.stringify(eventView(event)),
        });
      }
    }
  };
  const heartbeat = setInterval(() => void stream.write(': ping\n\n').catch(() => undefined), HEARTBEAT_MS);
  try {
    // Replay: everything stored (flushed above) and whatever arrives meanwhile.
    await catchUp(Number.POSITIVE_INFINITY);
    while (!closed()) {
      // Arm the wake-up before reading, so an event made durable during a write is not missed.
      const next = new Promise<void>((resolve) => {
        wake = resolve;
      });
      await catchUp(durable);
      if (closed()) break;
      await Promise.race([done, next]);
    }
    if (lifecycle.shuttingDown && !stream.aborted) {
      await stream.writeSSE({
        event: 'shutdown',
        data: JSON.stringify({
          lastEventId: last,
          message: 'The service is shutting down; reconnect with Last-Event-ID.',
        }),
      });
    }
    if (overtaken !== undefined && !stream.aborted) {
      await stream.writeSSE({
        event: 'truncated',
        data: JSON.stringify({
          lastEventId: last,
          firstSeq: overtaken,
          message: `Retention removed events ${last + 1} to ${overtaken - 1} before they were sent; the kept log goes on at ${overtaken}.`,
        }),
      });
    }
    if (deleted && !stream.aborted) {
      await stream.writeSSE({
        event: 'deleted',
        data: JSON.stringify({ lastEventId: last, message: 'The agent was deleted.' }),
      });
    }
  } finally {
    clearInterval(heartbeat);
    unsubscribe();
    stopWatching();
  }
}
