// Following an agent's durable log over server-sent events, with resume: every event's seq is its
// SSE id, so after a broken connection, a `shutdown` of the service or a refused reconnect (503)
// the next request says `Last-Event-ID: <last seq seen>` and the service replays exactly what
// came after (without reconnecting, the iteration just ends where the stream did). Invariants:
// events come in seq order, none twice (a seq at or below the last one seen is dropped), none
// skipped; the iteration ends when the agent is deleted, when `signal` aborts (no event is yielded
// after that) or when the consumer stops (which closes the connection).
import { isDshError } from './errors.ts';
import { pathOf, type Transport } from './http.ts';
import { readSse } from './sse.ts';
import type { AgentEvent } from './types.ts';

export interface EventsOptions {
  /** Only events after this seq. Default 0: the whole log, then live events. */
  after?: number;
  /** Ends the iteration (and the connection) when it aborts. */
  signal?: AbortSignal;
  /** Reconnect and resume after a broken stream or a restart of the service. Default true. */
  reconnect?: boolean;
  /** The first wait before reconnecting, doubled on each failure up to 5 s. Default 250 ms. */
  retryMs?: number;
}

const MAX_RETRY_MS = 5_000;
/** Statuses of a service that is restarting or overloaded: worth another try. */
const RETRYABLE = new Set([429, 502, 503, 504]);

export async function* followEvents(
  transport: Transport,
  agentId: string,
  options: EventsOptions = {},
): AsyncGenerator<AgentEvent, void, undefined> {
  const stop = new AbortController();
  const signal = options.signal === undefined ? stop.signal : AbortSignal.any([options.signal, stop.signal]);
  const path = pathOf('/v1/agents/{id}/events', { id: agentId });
  const firstRetry = options.retryMs ?? 250;
  let last = options.after ?? 0;
  let retry = firstRetry;
  try {
    while (!signal.aborted) {
      let response: Response | undefined;
      try {
        response = await transport.request(path, {
          headers: { Accept: 'text/event-stream', 'Last-Event-ID': String(last) },
          signal,
        });
        for await (const message of readSse(response.body ?? new ReadableStream())) {
          // Messages already read arrive together: none is handed out once the signal aborted.
          if (signal.aborted) return;
          if (message.event === 'event') {
            const event = JSON.parse(message.data) as AgentEvent;
            retry = firstRetry;
            if (event.seq <= last) continue;
            last = event.seq;
            yield event;
          } else if (message.event === 'deleted') {
            return;
          } else if (message.event === 'shutdown') {
            break;
          }
        }
      } catch (error) {
        if (signal.aborted) return;
        const retryable = !isDshError(error) || (error.status !== undefined && RETRYABLE.has(error.status));
        if (!retryable || options.reconnect === false) throw error;
      }
      if (options.reconnect === false) return;
      await sleep(retry, signal);
      retry = Math.min(retry * 2, MAX_RETRY_MS);
    }
  } finally {
    // The consumer stopped (break, return, throw) or the stream ended: close the connection.
    stop.abort();
  }
}

/** Waits `ms`, or less when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
