// Secrets at rest: the columns that hold what a tenant gave the service to keep from everyone else
// (egress credentials, remote MCP server headers, MCP server environments) are stored sealed with
// AES-256-GCM under the service's secrets key, so a copy of the database alone (a backup, a replica,
// a stolen file) reveals none of them. The key is the operator's DSH_SECRETS_KEY (32 bytes, base64),
// or, without one, a key file made once next to the database file (mode 0600); an in-memory store
// gets a key of its own. Values stored before sealing existed (no `sealed:v1:` prefix) are read as
// they are and sealed at their next write. A value sealed under another key fails with
// CONFIG_INVALID, never with garbage.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { SandboxError } from '../errors.ts';

const PREFIX = 'sealed:v1:';
const KEY_BYTES = 32;

export interface Sealer {
  seal(text: string): string;
  /** The text of a sealed value; a value stored unsealed is returned as it is. */
  open(stored: string): string;
}

export function createSealer(key: Buffer): Sealer {
  if (key.length !== KEY_BYTES)
    throw new SandboxError('CONFIG_INVALID', `The secrets key must be ${KEY_BYTES} bytes.`);
  return {
    seal(text) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const body = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
      return `${PREFIX}${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
    },
    open(stored) {
      if (!stored.startsWith(PREFIX)) return stored;
      const raw = Buffer.from(stored.slice(PREFIX.length), 'base64');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
        decipher.setAuthTag(raw.subarray(12, 28));
        return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
      } catch {
        throw new SandboxError(
          'CONFIG_INVALID',
          'A sealed value of the store does not open with this secrets key (DSH_SECRETS_KEY, or the key file next to the database): the store was sealed under another key.',
        );
      }
    },
  };
}

/** DSH_SECRETS_KEY's text as a key: base64 of exactly 32 bytes. */
export function parseSecretsKey(text: string): Buffer {
  const key = Buffer.from(text.trim(), 'base64');
  if (key.length !== KEY_BYTES || key.toString('base64') !== text.trim())
    throw new SandboxError(
      'CONFIG_INVALID',
      `DSH_SECRETS_KEY must be ${KEY_BYTES} bytes in base64 (e.g. from \`openssl rand -base64 32\`).`,
    );
  return key;
}

/** The key kept in `file` (0600), made on first use. */
export function keyFileSecret(file: string): Buffer {
  if (!existsSync(file)) {
    try {
      writeFileSync(file, `${randomBytes(KEY_BYTES).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  return parseSecretsKey(readFileSync(file, 'utf8'));
}

/**
 * A JSON value as a sealed column holds it, on every backend: `seal` stores the value's JSON
 * sealed (as it is without a sealer), `open` reads a stored value back, sealed or not.
 */
export const sealedJson = (
  sealer: Sealer | undefined,
): { seal(value: unknown): string; open<T>(stored: string): T } => ({
  seal(value) {
    const text = JSON.stringify(value);
    return sealer?.seal(text) ?? text;
  },
  open: <T>(stored: string): T => JSON.parse(sealer?.open(stored) ?? stored) as T,
});
