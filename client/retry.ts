// Retrying a call batch with its Idempotency-Key: the service runs a key's batch at most once and
// answers a retry with the first answer (docs/api.md, "Idempotency keys"), so a batch whose answer
// was lost can be sent again safely. What is retried: a failure to reach the service or a
// connection cut before the answer was read (fetch's TypeError), a stream that ended before its
// results, and the answers a service sends when it cannot take the request now: 502, 503, 429
// when it says when to come back (Retry-After), and 409 IDEMPOTENCY_KEY_IN_PROGRESS (the batch
// still runs on another replica). Nothing else: any other 4xx, or a 500, is the answer.
// Invariants: the caller's AbortSignal ends the waiting and the attempts at once (its reason is
// thrown); delays grow exponentially with jitter up to `maxDelayMs`, a Retry-After wins over them.
import { DshError } from './errors.ts';

export interface RetryOptions {
  /** Attempts in all, the first included. Default 4; 1 turns retries off. */
  attempts?: number;
  /** The delay before the first retry, doubled for each next one (with jitter). Default 250 ms. */
  baseDelayMs?: number;
  /** The longest delay between attempts (a Retry-After above it is waited out up to it). Default 5000 ms. */
  maxDelayMs?: number;
}

export const DEFAULT_RETRY: Required<RetryOptions> = { attempts: 4, baseDelayMs: 250, maxDelayMs: 5000 };

/** Set on the error of a call stream that ended before its results (the batch may have run). */
export const STREAM_CUT = Symbol('dsh.streamCut');

/** How long to wait before retrying after `error`, or undefined when it is not retried. */
export function retryDelayOf(
  error: unknown,
  retry: number,
  options: Required<RetryOptions>,
): number | undefined {
  const backoff = () => {
    const full = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** retry);
    return full / 2 + Math.random() * (full / 2);
  };
  if (error instanceof DshError) {
    if ((error as { [STREAM_CUT]?: true })[STREAM_CUT]) return backoff();
    if (error.status === 502 || error.status === 503)
      return error.retryAfterS === undefined
        ? backoff()
        : Math.min(options.maxDelayMs, error.retryAfterS * 1000);
    // The batch still runs on another replica: its answer comes once it settles.
    if (error.code === 'IDEMPOTENCY_KEY_IN_PROGRESS')
      return error.retryAfterS === undefined
        ? backoff()
        : Math.min(options.maxDelayMs, error.retryAfterS * 1000);
    if (error.status === 429 && error.retryAfterS !== undefined)
      return Math.min(options.maxDelayMs, error.retryAfterS * 1000);
    return undefined;
  }
  // fetch rejects with a TypeError when it cannot connect or the connection is cut mid-answer.
  return error instanceof TypeError ? backoff() : undefined;
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** `send` until it answers, or throws what is not retried, or the attempts are spent (the last error). */
export async function withRetries<T>(
  send: () => Promise<T>,
  options: Required<RetryOptions>,
  signal: AbortSignal | undefined,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await send();
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      const delay = attempt < options.attempts ? retryDelayOf(error, attempt - 1, options) : undefined;
      if (delay === undefined) throw error;
      await pause(delay, signal);
    }
  }
}
