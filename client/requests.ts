// Answering host requests (approvals of `ask` calls, remote tool calls, subagents, user questions,
// …) with a handler: onRequest notes where the agent's log ends (or starts from the caller's
// `after`), lists what is pending, then follows the log's events from that point and, for each
// `request.created` of the kinds asked for, reads the request and posts the handler's answer. The
// end is read before the list, so a request made meanwhile is in the list or in the events (once,
// by `seen`); a listener never reads the log from its beginning.
// Invariants: each request reaches the handler at most once per listener; one settled meanwhile
// (answered elsewhere, expired, cancelled) is skipped, and losing the race to another answer
// (CONFLICT, REQUEST_EXPIRED) is not an error; a handler that throws leaves the request pending
// (it expires as the service decides) and is reported to `onError`.
import { isDshError } from './errors.ts';
import type { EventsOptions } from './events.ts';
import type { AgentEvent, HostRequest, RequestAnswer, RequestKind, RequestOf } from './types.ts';

/** What a listener needs of the agent (DshAgent implements it). */
export interface RequestSource {
  events(options?: EventsOptions): AsyncIterable<AgentEvent>;
  /** The agent's usage; its `log.events` is the seq of the log's last event. */
  usage(): Promise<{ log: { events: number } }>;
  requests: {
    list(state?: HostRequest['state']): Promise<HostRequest[]>;
    get(requestId: string): Promise<HostRequest>;
    answer(requestId: string, answer: RequestAnswer): Promise<unknown>;
  };
}

export type RequestHandler<K extends RequestKind> = (
  request: RequestOf<K>,
  context: { signal: AbortSignal },
) => RequestAnswer | Promise<RequestAnswer>;

export interface OnRequestOptions {
  /** Stops the listener when it aborts. */
  signal?: AbortSignal;
  /**
   * Follow the log's events after this seq (requests pending now are answered whatever it is).
   * Default: the log's end when the listener starts, so the log before it is never read.
   */
  after?: number;
  /** Told about a handler that threw or an answer that failed. Default: console.error. */
  onError?: (error: unknown, request?: HostRequest) => void;
}

export interface RequestListener {
  /** Settles once the listener stopped and its handlers finished. */
  readonly done: Promise<void>;
  /** Stops following and waits for the handlers running now. */
  stop(): Promise<void>;
}

export function listenForRequests<K extends RequestKind>(
  source: RequestSource,
  kinds: readonly K[],
  handler: RequestHandler<K>,
  options: OnRequestOptions = {},
): RequestListener {
  const stop = new AbortController();
  const signal = options.signal === undefined ? stop.signal : AbortSignal.any([options.signal, stop.signal]);
  const onError = options.onError ?? ((error: unknown) => console.error('dsh-sandbox onRequest:', error));
  const wanted = new Set<string>(kinds);
  const seen = new Set<string>();
  const running = new Set<Promise<void>>();

  function dispatch(request: HostRequest): void {
    if (seen.has(request.id)) return;
    seen.add(request.id);
    if (request.state !== 'pending' || !wanted.has(request.kind)) return;
    const task = answer(request as RequestOf<K>).finally(() => running.delete(task));
    running.add(task);
  }

  async function answer(request: RequestOf<K>): Promise<void> {
    try {
      const reply = await handler(request, { signal });
      await source.requests.answer(request.id, reply);
    } catch (error) {
      if (isDshError(error, 'CONFLICT') || isDshError(error, 'REQUEST_EXPIRED')) return;
      onError(error, request);
    }
  }

  async function follow(): Promise<void> {
    const after = options.after ?? (await source.usage()).log.events;
    // Settled requests are marked seen so that the events after `after` do not fetch each one.
    for (const request of await source.requests.list()) {
      if (request.state === 'pending') dispatch(request);
      else seen.add(request.id);
    }
    for await (const event of source.events({ signal, after })) {
      if (event.type !== 'request.created') continue;
      const data = event.data as { requestId?: unknown; kind?: unknown };
      if (typeof data.requestId !== 'string' || seen.has(data.requestId)) continue;
      if (typeof data.kind === 'string' && !wanted.has(data.kind)) continue;
      dispatch(await source.requests.get(data.requestId));
    }
  }

  const done = follow()
    .catch((error: unknown) => {
      if (!signal.aborted) onError(error);
    })
    .then(async () => {
      while (running.size > 0) await Promise.all(running);
    });

  async function stopListening(): Promise<void> {
    stop.abort();
    await done;
  }
  return { done, stop: stopListening };
}
