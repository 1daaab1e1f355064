// Per-tenant concurrency: at most `limit` requests of one tenant in flight at once; the next one
// answers 429 RATE_LIMITED with Retry-After, so one tenant cannot occupy the whole service. With
// replicas on one database (a `share`: store/replica-share.ts) each admits ceil(limit / N) of the
// N live replicas', so the tenant holds at most limit + N - 1 across them: counted here, never a
// round trip per request. A request forwarded to its family's owner takes its slot there.
// Invariant: a slot is released exactly once, when the handler's response (or stream) is done.
import type { MiddlewareHandler } from 'hono';
import { SandboxError } from '../errors.ts';
import type { ReplicaShare } from '../store/replica-share.ts';
import type { ApiEnv } from './env.ts';
import { relay } from './relay.ts';

export interface TenantLimiter {
  tryAcquire(tenantId: string): (() => void) | undefined;
  inFlight(tenantId: string): number;
}

/** `limit` requests per tenant; with `share`, this replica's part of them. */
export const createTenantLimiter = (limit: number, share?: ReplicaShare): TenantLimiter => {
  const counts = new Map<string, number>();
  return {
    tryAcquire(tenantId) {
      const n = counts.get(tenantId) ?? 0;
      if (n >= (share === undefined ? limit : share.of(limit))) return undefined;
      counts.set(tenantId, n + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (counts.get(tenantId) ?? 1) - 1;
        if (left <= 0) counts.delete(tenantId);
        else counts.set(tenantId, left);
      };
    },
    inFlight: (tenantId) => counts.get(tenantId) ?? 0,
  };
};

/** Responses that stream for as long as the client reads: event streams and downloads. */
const STREAMED = ['text/event-stream', 'application/octet-stream', 'application/x-tar'];

/** Holds a slot for the request; streamed responses (events, downloads) hold it until the stream ends. */
export const tenantConcurrency = (limiter: TenantLimiter): MiddlewareHandler<ApiEnv> =>
  async function tenantConcurrency(c, next) {
    const release = limiter.tryAcquire(c.get('tenant').id);
    if (release === undefined) {
      throw new SandboxError('RATE_LIMITED', 'Too many concurrent requests for this tenant; retry shortly.', {
        data: { retryAfterS: 1 },
      });
    }
    c.set('releaseSlot', release);
    try {
      await next();
    } catch (error) {
      release();
      throw error;
    }
    // The content type first: reading `body` of a small answer (a JSON string) would turn it into a
    // stream that the server then has to read back (@hono/node-server writes a string directly).
    const type = c.res.headers.get('content-type') ?? '';
    if (!STREAMED.some((t) => type.startsWith(t)) || c.res.body === null) {
      release();
      return;
    }
    // Release when the stream is fully read or cancelled; nothing is read ahead of the client, so
    // a download never reads ahead of it either (download.ts).
    c.res = relay(c.res, release).response;
  };
