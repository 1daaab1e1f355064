// Resumable answers of the agents' MCP endpoint, for the 2025 revisions (MCP Streamable HTTP,
// "Resumability and Redelivery"): a POST answered as an SSE stream gets an id on every event
// (`<stream>_<n>`, a cursor within that one stream), and, for clients of 2025-11-25 on, a first
// priming event (an id, a `retry` hint and empty data) so a client that loses the stream before the
// answer knows where to resume. The answer is read from the SDK's response here, whatever becomes
// of the client's connection, and kept; a GET with `Last-Event-ID` gets the events after that id
// and then the rest as they come. 2026-era clients are not served here: closing their request is
// how they cancel a call, so there is nothing to resume.
// Invariants: a stream is resumed only by its owner (tenant and agent; anything else is "unknown");
// events are never replayed from another stream; at most one client reads a stream at a time (a
// newer one takes it over); a stream is kept RETAIN_MS after its answer ended, at most MAX_BYTES of
// events each (the oldest go first: resuming before them is "unknown"), TENANT_STREAMS streams and
// TENANT_BYTES per tenant (its own oldest finished ones dropped first, so that one tenant's flood of
// short answers never pushes out another's kept answer) and MAX_STREAMS streams and TOTAL_BYTES in
// all, the oldest finished ones of the tenant holding the most dropped first (so that several
// tenants each at its share cannot push out a further tenant's answer either).
import { randomUUID } from 'node:crypto';

export const RETAIN_MS = 60_000;
const MAX_BYTES = 8 * 1024 * 1024;
const MAX_STREAMS = 512;
const TOTAL_BYTES = 64 * 1024 * 1024;
/** A tenant's share: an eighth of the whole, so that it takes more than one tenant to fill it. */
const TENANT_STREAMS = MAX_STREAMS / 8;
const TENANT_BYTES = TOTAL_BYTES / 8;
/** The reconnect delay told to clients in the priming event. */
export const RETRY_MS = 500;

interface Stream {
  owner: string;
  tenant: string;
  /** Event frames with their ids; frames[i] is event number `base + i + 1`. */
  frames: string[];
  base: number;
  bytes: number;
  done: boolean;
  /** The client reading the stream now, if any. */
  live?: ReadableStreamDefaultController<Uint8Array>;
  timer?: ReturnType<typeof setTimeout>;
  onEnd?: () => void;
}

export interface ResumableStreams {
  /**
   * The SSE answer `response` of a POST with ids on its events, kept for resuming (see the header);
   * `onEnd` runs once the answer ended (not when its reader goes).
   */
  record(
    owner: string,
    response: Response,
    options: { tenant: string; priming: boolean; onEnd?: () => void },
  ): Response;
  /** The events after `lastEventId` and the rest live, or undefined when there is no such stream of `owner`'s. */
  resume(owner: string, lastEventId: string): Response | undefined;
  /** Streams kept now (for tests and gauges). */
  size(): number;
}

const encoder = new TextEncoder();
const SSE_HEADERS = { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache, no-transform' };

/** Frames of an SSE text that ends at a frame boundary, and the unfinished rest. */
const splitFrames = (text: string): { frames: string[]; rest: string } => {
  const parts = text.split(/\r?\n\r?\n/);
  const rest = parts.pop() ?? '';
  return { frames: parts.filter((part) => part.trim() !== ''), rest };
};

/** Sends a frame to the stream's reader, if it has one. */
const send = (stream: Stream, frame: string) => {
  try {
    stream.live?.enqueue(encoder.encode(frame));
  } catch {
    stream.live = undefined; // its reader went
  }
};

/** The events of `stream` after number `after`, then (while it runs) the rest as they come. */
function resumedBody(stream: Stream, after: number): ReadableStream<Uint8Array> {
  let mine: ReadableStreamDefaultController<Uint8Array> | undefined;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      mine = controller;
      // A newer reader takes the stream over; the older one ends.
      try {
        stream.live?.close();
      } catch {
        // its reader went already
      }
      stream.live = undefined;
      for (const frame of stream.frames.slice(after - stream.base)) controller.enqueue(encoder.encode(frame));
      if (stream.done) controller.close();
      else stream.live = controller;
    },
    cancel() {
      if (stream.live === mine) stream.live = undefined;
    },
  });
}

/** The tenant's oldest finished streams to drop for it to hold no more than its share. */
function pastShare(streams: ReadonlyMap<string, Stream>, tenant: string): string[] {
  let count = 0;
  let bytes = 0;
  for (const stream of streams.values())
    if (stream.tenant === tenant) {
      count += 1;
      bytes += stream.bytes;
    }
  const drops: string[] = [];
  for (const [id, stream] of streams) {
    if (count <= TENANT_STREAMS && bytes <= TENANT_BYTES) break;
    if (stream.tenant !== tenant || !stream.done) continue;
    count -= 1;
    bytes -= stream.bytes;
    drops.push(id);
  }
  return drops;
}

/**
 * The oldest finished stream of the tenant holding the most streams (or bytes), if any is finished:
 * what goes when the whole is over, so that several tenants each within its share cannot push out
 * a quiet tenant's one kept answer.
 */
function biggestHoldersOldest(
  streams: ReadonlyMap<string, Stream>,
  by: 'count' | 'bytes',
): string | undefined {
  const held = new Map<string, number>();
  const oldest = new Map<string, string>();
  for (const [id, stream] of streams) {
    if (!stream.done) continue;
    held.set(stream.tenant, (held.get(stream.tenant) ?? 0) + (by === 'count' ? 1 : stream.bytes));
    if (!oldest.has(stream.tenant)) oldest.set(stream.tenant, id);
  }
  let most: string | undefined;
  for (const [tenant, amount] of held)
    if (most === undefined || amount > (held.get(most) ?? 0)) most = tenant;
  return most === undefined ? undefined : oldest.get(most);
}

export function createResumableStreams(): ResumableStreams {
  const streams = new Map<string, Stream>();
  let totalBytes = 0;

  const drop = (id: string) => {
    const stream = streams.get(id);
    if (stream === undefined) return;
    clearTimeout(stream.timer);
    totalBytes -= stream.bytes;
    streams.delete(id);
  };

  /** Drops finished streams while over the bounds (running ones end with their call), the biggest holder's first. */
  const evict = () => {
    while (streams.size > MAX_STREAMS || totalBytes > TOTAL_BYTES) {
      const id = biggestHoldersOldest(streams, totalBytes > TOTAL_BYTES ? 'bytes' : 'count');
      if (id === undefined) return;
      drop(id);
    }
  };

  const keep = (stream: Stream, frame: string) => {
    stream.frames.push(frame);
    stream.bytes += frame.length;
    totalBytes += frame.length;
    while (stream.bytes > MAX_BYTES && stream.frames.length > 1) {
      const oldest = stream.frames.shift() ?? '';
      stream.base += 1;
      stream.bytes -= oldest.length;
      totalBytes -= oldest.length;
    }
  };

  const finish = (id: string, stream: Stream) => {
    stream.done = true;
    stream.onEnd?.();
    try {
      stream.live?.close();
    } catch {
      // already closed by its reader
    }
    stream.live = undefined;
    stream.timer = setTimeout(() => drop(id), RETAIN_MS);
    stream.timer.unref?.();
    for (const old of pastShare(streams, stream.tenant)) drop(old);
    evict();
  };

  /** Reads the SDK's answer to its end, numbering its events, whether or not a client listens. */
  async function pump(id: string, stream: Stream, body: ReadableStream<Uint8Array>) {
    const decoder = new TextDecoder();
    let pending = '';
    let n = 0;
    try {
      for await (const chunk of body) {
        const { frames, rest } = splitFrames(pending + decoder.decode(chunk, { stream: true }));
        pending = rest;
        for (const block of frames) {
          // Comments (keep-alives) go to whoever listens and are not kept.
          if (!/^data:/m.test(block)) {
            send(stream, `${block}\n\n`);
            continue;
          }
          n += 1;
          const frame = `id: ${id}_${n}\n${block}\n\n`;
          keep(stream, frame);
          send(stream, frame);
        }
      }
    } catch {
      // The answer broke off: what came is kept, and the stream ends there.
    } finally {
      finish(id, stream);
    }
  }

  function record(
    owner: string,
    response: Response,
    options: { tenant: string; priming: boolean; onEnd?: () => void },
  ): Response {
    const body = response.body;
    if (body === null) {
      options.onEnd?.();
      return response;
    }
    const id = randomUUID();
    const stream: Stream = { owner, tenant: options.tenant, frames: [], base: 0, bytes: 0, done: false };
    if (options.onEnd !== undefined) stream.onEnd = options.onEnd;
    streams.set(id, stream);
    const client = new ReadableStream<Uint8Array>({
      start(controller) {
        stream.live = controller;
        if (options.priming)
          controller.enqueue(encoder.encode(`id: ${id}_0\nretry: ${RETRY_MS}\ndata: \n\n`));
      },
      cancel() {
        // The client went: the answer is still read and kept for its reconnect.
        stream.live = undefined;
      },
    });
    void pump(id, stream, body);
    return new Response(client, { status: response.status, headers: response.headers });
  }

  function resume(owner: string, lastEventId: string): Response | undefined {
    const match = /^([0-9a-f-]{36})_(\d{1,9})$/.exec(lastEventId.trim());
    if (match === null) return undefined;
    const [, id = '', seen = ''] = match;
    const stream = streams.get(id);
    const after = Number(seen);
    if (stream === undefined || stream.owner !== owner || after < stream.base) return undefined;
    return new Response(resumedBody(stream, after), { status: 200, headers: SSE_HEADERS });
  }

  return { record, resume, size: () => streams.size };
}
