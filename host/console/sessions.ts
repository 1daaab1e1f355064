// The console's sessions: an opaque random id (the cookie's only content) mapped, in this process's
// memory, to the key it signed in with and its CSRF token. Invariants: a session ends at its
// absolute expiry or at sign-out, whichever comes first, and is never readable after (its `ended`
// signal aborts then, so that what it keeps open ends with it); the map holds
// at most `max` sessions and one key at most `perKey` (the oldest ends first), so repeated sign-ins
// cannot grow it without bound, nor one tenant's sign-ins end everybody else's sessions.
// A restart ends every session (people sign in again): keys are never written anywhere.
import { randomBytes } from 'node:crypto';

/** Who signed in: a tenant with its API key, or the operator with the admin key. */
export type SessionRole = 'tenant' | 'operator';

export interface ConsoleSession {
  readonly id: string;
  readonly role: SessionRole;
  /** The bearer key every API request of this session carries. */
  readonly key: string;
  /** The synchronizer token every mutating form of this session must send back. */
  readonly csrf: string;
  readonly expiresAt: number;
  /** Aborted when the session is closed or pushed out by the bounds (expiry: see guard.ts). */
  readonly ended: AbortSignal;
}

export interface SessionOptions {
  /** How long a session lasts from sign-in. Default 8 hours. */
  ttlMs?: number;
  /** Sessions held at once; past it the oldest ends. Default 10,000. */
  max?: number;
  /** Sessions of one key held at once; past it that key's oldest ends. Default 32. */
  perKey?: number;
  now?: () => number;
}

export interface Sessions {
  open(role: SessionRole, key: string): ConsoleSession;
  /** The live session of this id, or undefined (unknown, ended or expired). */
  get(id: string | undefined): ConsoleSession | undefined;
  close(id: string): void;
}

const token = (): string => randomBytes(32).toString('base64url');

export const createSessions = ({
  ttlMs = 8 * 3600_000,
  max = 10_000,
  perKey = 32,
  now = Date.now,
}: SessionOptions = {}): Sessions => {
  // Insertion order is sign-in order, and every session lasts ttlMs: the first entry is the oldest
  // and expires first.
  const live = new Map<string, ConsoleSession>();
  const enders = new Map<string, AbortController>();
  function end(id: string): void {
    live.delete(id);
    enders.get(id)?.abort();
    enders.delete(id);
  }
  return {
    open(role, key) {
      const at = now();
      for (const [id, oldest] of live) {
        if (oldest.expiresAt > at) break;
        end(id);
      }
      const same = [...live.values()].filter((s) => s.key === key);
      for (const old of same.slice(0, Math.max(0, same.length - perKey + 1))) end(old.id);
      const ender = new AbortController();
      const id = token();
      const session = { id, role, key, csrf: token(), expiresAt: at + ttlMs, ended: ender.signal };
      live.set(id, session);
      enders.set(id, ender);
      for (const oldest of live.keys()) {
        if (live.size <= max) break;
        end(oldest);
      }
      return session;
    },
    get(id) {
      if (id === undefined) return undefined;
      const session = live.get(id);
      if (session === undefined) return undefined;
      if (session.expiresAt <= now()) {
        end(id);
        return undefined;
      }
      return session;
    },
    close(id) {
      end(id);
    },
  };
};
