// Failed key attempts, throttled per source (issue 28: 120 wrong keys got 120 instant 401s). Every
// check of a key (tenant keys, the admin key, the metrics key, the console's sign-in, which asks the
// API) counts a wrong one against the request's source (./client-address.ts). A source that made
// `maxFailures` failed attempts within `windowMs` of its first is answered 429 AUTH_THROTTLED with
// Retry-After until that window ends, before its key is even looked at: a right key from it waits
// too (else the answer would tell a guess that hit), while every other source is unaffected.
// Invariants: only failures make entries, so valid traffic never grows the table; the table holds
// at most `maxSources` sources, the least recently failed forgotten first (a flood of sources
// costs bounded memory; forgetting one gives it no more than the flood's own sources had); a
// success never clears a source's count (else a tenant could interleave its own key with guesses
// at another's); a request without a source (in-process) is never throttled.
import { SandboxError } from '../errors.ts';

export interface AuthThrottleOptions {
  /** Failed key attempts one source may make per window; the next ones answer 429. Default 10. */
  maxFailures?: number;
  /** The window, from a source's first failure in it. Default 60 s. */
  windowMs?: number;
  /** Sources remembered at once; past it the least recently failed is forgotten. Default 10,000. */
  maxSources?: number;
  /** The clock (ms). Default Date.now. */
  now?: () => number;
}

export interface AuthThrottleStats {
  /** Failed key attempts since start. */
  failures: number;
  /** Attempts refused since start because their source was throttled. */
  refused: number;
  /** Sources with failures in their current window. */
  sources: number;
}

export interface AuthThrottle {
  /** True while `source` has used up its failures (nothing counted). */
  throttled(source: string | undefined): boolean;
  /** Throws AUTH_THROTTLED (429, Retry-After) while `source` has used up its failures. */
  admit(source: string | undefined): void;
  /** Counts a failed key attempt of `source`. */
  failed(source: string | undefined): void;
  stats(): AuthThrottleStats;
}

/** The throttle bound to one request's source: what the key checks (./auth.ts) call. */
export interface KeyAttempts {
  /** True while the source has used up its failures (nothing counted). */
  throttled(): boolean;
  /** Throws AUTH_THROTTLED while the source has used up its failures. */
  admit(): void;
  /** Counts a failed key attempt of the source. */
  failed(): void;
}

/** The throttle as seen by one request from `source`. */
export const keyAttemptsOf = (throttle: AuthThrottle, source: string | undefined): KeyAttempts => ({
  throttled: () => throttle.throttled(source),
  admit: () => throttle.admit(source),
  failed: () => throttle.failed(source),
});

interface Entry {
  failures: number;
  /** When the window that began with the entry's first failure ends. */
  ends: number;
}

export const createAuthThrottle = (options: AuthThrottleOptions = {}): AuthThrottle => {
  const maxFailures = options.maxFailures ?? 10;
  const windowMs = options.windowMs ?? 60_000;
  const maxSources = options.maxSources ?? 10_000;
  const now = options.now ?? Date.now;
  if (!(maxFailures >= 1 && windowMs >= 1 && maxSources >= 1))
    throw new SandboxError('CONFIG_INVALID', 'The key-failure throttle needs positive limits.');
  /** In order of last failure, oldest first (a Map keeps insertion order). */
  const entries = new Map<string, Entry>();
  let failures = 0;
  let refused = 0;

  /** The source's entry if its window is still open (an ended one is dropped). */
  const current = (source: string): Entry | undefined => {
    const entry = entries.get(source);
    if (entry !== undefined && entry.ends <= now()) {
      entries.delete(source);
      return undefined;
    }
    return entry;
  };

  return {
    throttled: (source) => {
      if (source === undefined) return false;
      const entry = current(source);
      return entry !== undefined && entry.failures >= maxFailures;
    },
    admit(source) {
      if (source === undefined) return;
      const entry = current(source);
      if (entry === undefined || entry.failures < maxFailures) return;
      refused++;
      const retryAfterS = Math.max(1, Math.ceil((entry.ends - now()) / 1000));
      throw new SandboxError(
        'AUTH_THROTTLED',
        `Too many failed key attempts from this address; try again in ${retryAfterS} s.`,
        { data: { retryAfterS } },
      );
    },
    failed(source) {
      failures++;
      if (source === undefined) return;
      const entry = current(source) ?? { failures: 0, ends: now() + windowMs };
      entry.failures++;
      entries.delete(source);
      entries.set(source, entry);
      if (entries.size > maxSources) entries.delete(entries.keys().next().value as string);
    },
    stats() {
      const at = now();
      let sources = 0;
      for (const entry of entries.values()) if (entry.ends > at) sources++;
      return { failures, refused, sources };
    },
  };
};
