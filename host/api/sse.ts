// Server-sent event streams that /metrics counts while they are open (dsh_sse_streams_open by
// kind): hono's streamSSE, with the app's stream counter (set on the context by the metrics
// middleware) taken when the stream starts and given back when its callback ends. An event stream
// also ends once the key that opened it is refused (./key-watch.ts; MCP streams watch their key
// with their other endings, routes/mcp-streams.ts). Each event written is activity (the context's
// `activity`: idle polling, ../idle-poll.ts), its heartbeat comments are not: a stream with nothing
// to send keeps no CPU polling.
import type { Context } from 'hono';
import { type SSEStreamingApi, streamSSE } from 'hono/streaming';
import type { ApiEnv } from './env.ts';
import { onKeyRefused } from './key-watch.ts';

/** Kinds that stay open for as long as the client listens, watched here; a call stream ends with its batch. */
const FOLLOWING = new Set(['events']);

export const countedSSE = (
  c: Context<ApiEnv>,
  kind: string,
  run: (stream: SSEStreamingApi) => Promise<void>,
  onError?: (error: Error, stream: SSEStreamingApi) => Promise<void>,
): Response =>
  streamSSE(
    c,
    async (stream) => {
      const close = c.get('openStream')?.(kind);
      const activity = c.get('activity');
      if (activity !== undefined) {
        const writeSSE = stream.writeSSE.bind(stream);
        stream.writeSSE = (message) => {
          activity();
          return writeSSE(message);
        };
      }
      const unwatch = FOLLOWING.has(kind) ? onKeyRefused(c, () => stream.abort()) : undefined;
      try {
        await run(stream);
      } finally {
        unwatch?.();
        close?.();
      }
    },
    onError,
  );
