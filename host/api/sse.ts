// Server-sent event streams that /metrics counts while they are open (dsh_sse_streams_open by
// kind): hono's streamSSE, with the app's stream counter (set on the context by the metrics
// middleware) taken when the stream starts and given back when its callback ends.
import type { Context } from 'hono';
import { type SSEStreamingApi, streamSSE } from 'hono/streaming';
import type { ApiEnv } from './env.ts';

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
      try {
        await run(stream);
      } finally {
        close?.();
      }
    },
    onError,
  );
