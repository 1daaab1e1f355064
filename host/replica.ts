// This replica's identity among the control planes sharing one store: its id (DSH_REPLICA_ID, a
// fresh one per start by default) and the base URL the other replicas reach it at
// (DSH_REPLICA_URL, by default made from the listen address). It lives apart from host/api so that
// the settings table (./settings.ts) can check both without importing the HTTP room; host/api/forward
// signs with the id and forwards to the URLs.
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { SandboxError } from './errors.ts';

/** A replica id: it travels in a header (x-dsh-forwarded-by) and names the replica in logs. */
export const REPLICA_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** DSH_REPLICA_ID's value, checked; CONFIG_INVALID otherwise. */
export const parseReplicaId = (raw: string): string => {
  if (!REPLICA_ID.test(raw))
    throw new SandboxError(
      'CONFIG_INVALID',
      `DSH_REPLICA_ID must be 1-64 letters, digits, ".", "_", ":" or "-", got "${raw.slice(0, 80)}"`,
    );
  return raw;
};

/** DSH_REPLICA_URL's value as the base URL it names: http(s), an origin without path, query or user. */
export const parseReplicaUrl = (raw: string): string => {
  let parsed: URL | undefined;
  try {
    parsed = new URL(raw);
  } catch {}
  if (
    parsed === undefined ||
    (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') ||
    (parsed.pathname !== '/' && parsed.pathname !== '') ||
    parsed.search !== '' ||
    parsed.hash !== '' ||
    parsed.username !== '' ||
    parsed.password !== ''
  )
    throw new SandboxError(
      'CONFIG_INVALID',
      `DSH_REPLICA_URL must be an http(s) base URL like http://replica-a.internal:7070 (no path), got "${raw.slice(0, 200)}"`,
    );
  return parsed.origin;
};

/** A fresh replica id: the machine's name and a random part, so that a restart is a new replica. */
export const newReplicaId = (): string =>
  `${hostname()
    .replace(/[^A-Za-z0-9.-]/g, '-')
    .slice(0, 48)}-${randomBytes(6).toString('hex')}`;

/**
 * The URL other replicas reach this one at: DSH_REPLICA_URL when set, else the listen address and
 * the port the server got (a wildcard address becomes loopback: replicas on other machines need
 * DSH_REPLICA_URL).
 */
export const replicaUrlOf = (
  settings: { replicaUrl?: string | undefined; host: string },
  port: number,
): string => {
  if (settings.replicaUrl !== undefined) return settings.replicaUrl;
  const host =
    settings.host === '' || settings.host === '0.0.0.0'
      ? '127.0.0.1'
      : settings.host === '::'
        ? '::1'
        : settings.host;
  return `http://${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
};
