// The one place dockerode errors become SandboxErrors. Keeps `cause`. A 404 from the archive API
// says "no such container" in `reason` even when the path is what is missing, so the message is
// read from e.json?.message / e.message instead.

import { SandboxError } from '../../errors.ts';

interface DockerishError {
  statusCode?: number;
  reason?: string;
  message?: string;
  json?: { message?: string } | null;
}

/** The engine's own message for an error, without trusting its shape. */
export const dockerMessage = (e: unknown): string => {
  const d = e as DockerishError | undefined;
  const m = d?.json?.message ?? d?.message ?? String(e);
  return typeof m === 'string' ? m.trim() : String(m);
};

export const statusOf = (e: unknown): number | undefined => {
  const s = (e as DockerishError | undefined)?.statusCode;
  return typeof s === 'number' ? s : undefined;
};

export const isNotFound = (e: unknown): boolean => statusOf(e) === 404;
/** 304: already started / already stopped. */
export const isNotModified = (e: unknown): boolean => statusOf(e) === 304;
export const isConflict = (e: unknown): boolean => statusOf(e) === 409;

/** Translate any Docker engine error met while doing `what`. */
export const fromDocker = (e: unknown, what: string, data: Record<string, unknown> = {}): SandboxError => {
  if (e instanceof SandboxError) return e;
  const status = statusOf(e);
  const msg = dockerMessage(e);
  if (status === 404 && /no such image/i.test(msg)) {
    return new SandboxError(
      'CONFIG_INVALID',
      `${what}: the sandbox image is missing (${msg}); build it with \`npm run setup\`.`,
      { cause: e, data: { ...data, status } },
    );
  }
  return new SandboxError(
    'SANDBOX_UNAVAILABLE',
    `${what} failed: ${msg}${status ? ` (HTTP ${status})` : ''}. Check that the Docker engine is running.`,
    {
      cause: e,
      data: { ...data, status },
    },
  );
};
