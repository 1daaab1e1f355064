// The one place dockerode errors become SandboxErrors. Keeps `cause`. A 404 from the archive API
// says "no such container" in `reason` even when the path is what is missing, so the message is
// read from e.json?.message / e.message instead. Only an engine that did not answer is reported as
// one to check; an answer is quoted (a 404 "No such container" means the container is gone).

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

/**
 * A 404 about the container itself: it was removed (by hand, by the engine, by another process)
 * while this process still knew it. Looks through a SandboxError to its cause.
 */
export const isContainerGone = (e: unknown): boolean => {
  const inner = e instanceof SandboxError ? e.cause : e;
  return isNotFound(inner) && /no such container/i.test(dockerMessage(inner));
};

/**
 * Translate any Docker engine error met while doing `what`. The message names the real cause:
 * only an engine that did not answer at all is told to be checked; an answer (404, 409, 500 …)
 * is quoted as the engine gave it.
 */
export const fromDocker = (e: unknown, what: string, data: Record<string, unknown> = {}): SandboxError => {
  if (e instanceof SandboxError) return e;
  const status = statusOf(e);
  const msg = dockerMessage(e);
  const options = { cause: e, data: { ...data, status } };
  if (status === 404 && /no such image/i.test(msg)) {
    return new SandboxError(
      'CONFIG_INVALID',
      `${what}: the sandbox image is missing (${msg}); build it with \`npm run setup\`.`,
      options,
    );
  }
  if (isContainerGone(e)) {
    return new SandboxError(
      'SANDBOX_UNAVAILABLE',
      `${what} failed: the sandbox container is gone (${msg}); it was removed outside this control plane.`,
      options,
    );
  }
  if (status === undefined) {
    return new SandboxError(
      'SANDBOX_UNAVAILABLE',
      `${what} failed: ${msg}. Check that the Docker engine is running and reachable.`,
      options,
    );
  }
  return new SandboxError(
    'SANDBOX_UNAVAILABLE',
    `${what} failed: the Docker engine answered ${msg} (HTTP ${status}).`,
    options,
  );
};
