// Small helpers shared by sandboxd's handlers: argument readers that turn a malformed request into
// INVALID_ARGUMENTS, the errno → stable code table, and the wire form of an error.
// Runs on the image's sandboxd runtime (Node 22, bundled by esbuild) and, in unit tests, on the host's Node.

import { isWireErrorCode, WireError, type WireErrorCode } from '../../sandbox-wire/errors.ts';

export type Args = Record<string, unknown>;

const bad = (name: string, what: string): WireError =>
  new WireError('INVALID_ARGUMENTS', `Argument ${name} must be ${what}.`);

export const str = (args: Args, name: string): string => {
  const v = args[name];
  if (typeof v !== 'string') throw bad(name, 'a string');
  return v;
};
export const optStr = (args: Args, name: string): string | undefined =>
  args[name] === undefined || args[name] === null ? undefined : str(args, name);
export const optInt = (args: Args, name: string, fallback: number, max = Number.MAX_SAFE_INTEGER): number => {
  const v = args[name];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw bad(name, 'a non-negative integer');
  return Math.min(v, max);
};
export const bool = (args: Args, name: string): boolean => args[name] === true;
export const env = (args: Args, name: string): Record<string, string> => {
  const v = args[name];
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw bad(name, 'an object of strings');
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(v as Record<string, unknown>)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k) || typeof val !== 'string' || val.includes('\0'))
      throw bad(name, 'an object of NAME: string');
    out[k] = val;
  }
  return out;
};

const ERRNO: Record<string, WireErrorCode> = {
  ENOENT: 'FILE_NOT_FOUND',
  ENOTDIR: 'NOT_A_DIRECTORY',
  EISDIR: 'NOT_A_FILE',
  ENOTEMPTY: 'DIRECTORY_NOT_EMPTY',
  EEXIST: 'CONFLICT',
  EACCES: 'FORBIDDEN',
  EPERM: 'FORBIDDEN',
  EROFS: 'FORBIDDEN',
  ELOOP: 'INVALID_ARGUMENTS',
  EINVAL: 'INVALID_ARGUMENTS',
  ENAMETOOLONG: 'PATH_OUTSIDE_WORKSPACE',
  EFBIG: 'FILE_TOO_LARGE',
  ENOSPC: 'DISK_FULL',
  EDQUOT: 'DISK_FULL',
};
const HINT: Record<string, string> = {
  ENOENT: 'No such file or directory',
  ENOTDIR: 'Not a directory',
  EISDIR: 'Is a directory',
  ENOTEMPTY: 'Directory not empty',
  EEXIST: 'Already exists',
  EACCES: 'Permission denied',
  EPERM: 'Operation not permitted',
  EROFS: 'Read-only file system (only the workspace and /tmp are writable)',
  ENOSPC: 'No space left on device (the workspace is at its disk limit; delete files to make room)',
  EDQUOT: 'Disk quota exceeded',
};

/** Translate anything thrown by a handler into a WireError with a code from the wire's short list. */
export const toWireError = (error: unknown, path?: string): WireError => {
  if (error instanceof WireError) return error;
  const errno = (error as NodeJS.ErrnoException | undefined)?.code;
  if (typeof errno === 'string') {
    const code = ERRNO[errno] ?? 'TOOL_FAILED';
    const where = path ?? (error as NodeJS.ErrnoException).path;
    return new WireError(code, `${HINT[errno] ?? errno}${where ? `: ${where}` : ''}`, { cause: error });
  }
  return new WireError('INTERNAL', `sandboxd: ${error instanceof Error ? error.message : String(error)}`, {
    cause: error,
  });
};

/** What goes on the wire for a failed call: only a code on the list, whatever was thrown. */
export const wireError = (error: unknown): { code: WireErrorCode; message: string } => {
  const e = toWireError(error);
  return { code: isWireErrorCode(e.code) ? e.code : 'INTERNAL', message: e.message.slice(0, 4000) };
};

/** Kill a whole process group, ignoring one that is already gone. */
export const killGroup = (pid: number | undefined, signal: NodeJS.Signals): void => {
  if (pid === undefined || pid <= 1) return;
  // ESRCH (the group is gone) is the usual answer after a command's exit: its error is made without
  // a stack, which is most of what it costs (8-10 µs a call, 3.5 without).
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is gone
  } finally {
    Error.stackTraceLimit = limit;
  }
};

/** Resolves after `ms`, or at once when `signal` aborts. */
export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
