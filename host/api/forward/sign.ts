// The signature one replica puts on a request it forwards to another (./request.ts, ./upgrade.ts)
// and the check the receiving replica makes (./verify.ts). The key is derived (HKDF-SHA256) from the
// store's secrets key, which every replica on one database already shares; nothing new to hand out.
// What is signed: the forwarding replica's id, a timestamp, the method, the path with its query and
// the client's address, so a valid signature vouches for exactly one request line from one client
// within ±CLOCK_SKEW_MS. It says nothing about the tenant: the tenant's own Authorization travels
// unchanged and the owner checks it itself. Invariant: the names in FORWARD_HEADERS are only ever
// set by a forwarder; a client's own copies are dropped before forwarding and refused on receipt.
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { REPLICA_ID } from '../../replica.ts';

export const FORWARDED_BY = 'x-dsh-forwarded-by';
export const CLIENT_ADDRESS = 'x-dsh-client-address';
export const FORWARD_TS = 'x-dsh-forward-ts';
export const FORWARD_SIG = 'x-dsh-forward-sig';
/** Every header a forwarder sets: never taken from a client, never trusted without the signature. */
export const FORWARD_HEADERS: readonly string[] = [FORWARDED_BY, CLIENT_ADDRESS, FORWARD_TS, FORWARD_SIG];

/** How far a forwarded request's timestamp may be from the receiver's clock, either way. */
export const CLOCK_SKEW_MS = 30_000;

/** The key replicas sign forwarded requests with: its own purpose, so it never seals or opens a secret. */
export function replicaKey(secretsKey: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', secretsKey, Buffer.alloc(0), 'dsh-sandbox/replica-forward/v1', 32));
}

/** What a signature covers. `client` is '' when the request came over no connection. */
export interface ForwardClaim {
  replicaId: string;
  timestamp: number;
  method: string;
  /** The path and query, as the URL parser normalizes them (both sides parse the same way). */
  target: string;
  client: string;
}

/** The path and query of a URL, in the one form both sides sign. */
export const signedTarget = (url: string): string => {
  const parsed = new URL(url, 'http://replica.invalid');
  return `${parsed.pathname}${parsed.search}`;
};

const mac = (key: Buffer, claim: ForwardClaim): Buffer =>
  createHmac('sha256', key)
    // JSON keeps the fields apart whatever they hold.
    .update(
      JSON.stringify([
        claim.replicaId,
        claim.timestamp,
        claim.method.toUpperCase(),
        claim.target,
        claim.client,
      ]),
    )
    .digest();

/** The headers that carry `claim` and its signature. */
export function forwardHeaders(key: Buffer, claim: ForwardClaim): Record<string, string> {
  return {
    [FORWARDED_BY]: claim.replicaId,
    [FORWARD_TS]: String(claim.timestamp),
    [CLIENT_ADDRESS]: claim.client,
    [FORWARD_SIG]: mac(key, claim).toString('base64url'),
  };
}

/** What a receiver makes of a request's forwarding headers. */
export type ForwardVerdict =
  /** None of the headers: a client's own request. */
  | { kind: 'direct' }
  /** Signed by a replica holding the key, within the clock window: `client` is who sent it first. */
  | { kind: 'forwarded'; replicaId: string; client: string }
  /** Some of the headers, but no valid signature over them: refused (forged, stale or mangled). */
  | { kind: 'refused'; reason: string };

/** The verdict on the headers `header` reads, for `method` on `url` at `now`. */
export function verifyForward(
  key: Buffer,
  header: (name: string) => string | undefined,
  method: string,
  url: string,
  now: number,
): ForwardVerdict {
  const [replicaId, ts, client, sig] = [FORWARDED_BY, FORWARD_TS, CLIENT_ADDRESS, FORWARD_SIG].map(header);
  if (replicaId === undefined && ts === undefined && client === undefined && sig === undefined)
    return { kind: 'direct' };
  if (replicaId === undefined || ts === undefined || sig === undefined)
    return { kind: 'refused', reason: 'incomplete forwarding headers' };
  if (!REPLICA_ID.test(replicaId)) return { kind: 'refused', reason: 'malformed replica id' };
  const timestamp = Number(ts);
  if (!Number.isSafeInteger(timestamp) || Math.abs(now - timestamp) > CLOCK_SKEW_MS)
    return { kind: 'refused', reason: 'timestamp outside the clock window' };
  const claim = { replicaId, timestamp, method, target: signedTarget(url), client: client ?? '' };
  const given = Buffer.from(sig, 'base64url');
  const expected = mac(key, claim);
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { kind: 'refused', reason: 'bad signature' };
  return { kind: 'forwarded', replicaId, client: claim.client };
}
