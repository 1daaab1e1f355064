// The console's sessions: an opaque random id (the cookie's only content) mapped, in this process's
// memory, to the key it signed in with and its CSRF token. Invariants: a session ends at its
// absolute expiry or at sign-out, whichever comes first, and is never readable after (its `ended`
// signal aborts then, so that what it keeps open ends with it); the map holds
// at most `max` sessions, one key at most `perKey` and one owner (a tenant over all its keys, or
// the operator) at most `perOwner` (the oldest ends first), so repeated sign-ins cannot grow it
// without bound, nor one tenant's sign-ins end everybody else's sessions: not even with ever new
// keys, made and revoked in turn (a revoked key's sessions end only when next used). Past `max`,
// the oldest session of the owner holding the most ends, so that many tenants each within its
// share cannot sign out a tenant that holds one (before: the oldest of all, whoever's).
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
  /** Sessions of one owner (a tenant's keys together, or the operator) at once; past it its oldest ends. Default 64. */
  perOwner?: number;
  now?: () => number;
}

export interface Sessions {
  /** A new session of `key`, whose owner is its tenant's id (or `operator`). */
  open(role: SessionRole, key: string, owner: string): ConsoleSession;
  /** The live session of this id, or undefined (unknown, ended or expired). */
  get(id: string | undefined): ConsoleSession | undefined;
  close(id: string): void;
}

const token = (): string => randomBytes(32).toString('base64url');

/** The oldest session of the owner holding the most (`owners` is in sign-in order, never empty here). */
function biggestOwnersOldest(owners: ReadonlyMap<string, string>): string {
  const held = new Map<string, number>();
  for (const owner of owners.values()) held.set(owner, (held.get(owner) ?? 0) + 1);
  let most = '';
  for (const [owner, count] of held) if (count > (held.get(most) ?? 0)) most = owner;
  for (const [id, owner] of owners) if (owner === most) return id;
  return '';
}

export const createSessions = ({
  ttlMs = 8 * 3600_000,
  max = 10_000,
  perKey = 32,
  perOwner = 64,
  now = Date.now,
}: SessionOptions = {}): Sessions => {
  // Insertion order is sign-in order, and every session lasts ttlMs: the first entry is the oldest
  // and expires first.
  const live = new Map<string, ConsoleSession>();
  /** Each live session's owner, in sign-in order like `live`. */
  const owners = new Map<string, string>();
  const enders = new Map<string, AbortController>();
  function end(id: string): void {
    live.delete(id);
    owners.delete(id);
    enders.get(id)?.abort();
    enders.delete(id);
  }
  return {
    open(role, key, owner) {
      const at = now();
      for (const [id, oldest] of live) {
        if (oldest.expiresAt > at) break;
        end(id);
      }
      const same = [...live.values()].filter((s) => s.key === key);
      for (const old of same.slice(0, Math.max(0, same.length - perKey + 1))) end(old.id);
      const owned = [...owners].filter(([, o]) => o === owner);
      for (const [old] of owned.slice(0, Math.max(0, owned.length - perOwner + 1))) end(old);
      const ender = new AbortController();
      const id = token();
      const session = { id, role, key, csrf: token(), expiresAt: at + ttlMs, ended: ender.signal };
      live.set(id, session);
      owners.set(id, owner);
      enders.set(id, ender);
      while (live.size > max && owners.size > 0) end(biggestOwnersOldest(owners));
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
