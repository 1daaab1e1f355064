// The error codes sandboxd may answer a call with, and WireError, the one coded error it throws.
// The list is short and explicit on purpose: each code is also one of the control plane's codes
// (host/errors.ts; the host's translator, host/sandbox/wire-errors.ts, only compiles while that
// holds) and means there what it means here, with the same HTTP status. An answer with any other
// code comes from a broken or hostile sandboxd, and the host turns it into SANDBOX_PROTOCOL.
// Bundled into the image: runs on Node 18 and imports nothing.

export const WIRE_ERROR_CODES = [
  // A request or one of its arguments is malformed (also ELOOP, EINVAL).
  'INVALID_ARGUMENTS',
  // A path leaves the workspace, lexically or through a symlink, or is too long.
  'PATH_OUTSIDE_WORKSPACE',
  'FILE_NOT_FOUND',
  'NOT_A_FILE',
  'NOT_A_DIRECTORY',
  'DIRECTORY_NOT_EMPTY',
  // Something is in the way (EEXIST), a terminal name is taken or the terminal has exited.
  'CONFLICT',
  // Not permitted (EACCES, EPERM, EROFS).
  'FORBIDDEN',
  'FILE_TOO_LARGE',
  // The workspace file system is full (ENOSPC, EDQUOT).
  'DISK_FULL',
  // A cap of sandboxd's own is reached (running terminals, unread terminal input).
  'LIMIT_EXCEEDED',
  // An answer too large for one frame, or a terminal write over its cap.
  'PAYLOAD_TOO_LARGE',
  'JOB_NOT_FOUND',
  'TERMINAL_NOT_FOUND',
  // The call was cancelled.
  'ABORTED',
  // The call passed its deadline and was stopped.
  'TOOL_TIMEOUT',
  // A command or system call failed for a reason with no code of its own.
  'TOOL_FAILED',
  // sandboxd itself failed (a bug): anything thrown that is not a WireError or an errno.
  'INTERNAL',
] as const;

export type WireErrorCode = (typeof WIRE_ERROR_CODES)[number];

export const isWireErrorCode = (value: unknown): value is WireErrorCode =>
  typeof value === 'string' && (WIRE_ERROR_CODES as readonly string[]).includes(value);

export interface WireErrorOptions {
  // Structured detail for whoever catches it on this side; never sent on the wire.
  data?: Record<string, unknown>;
  cause?: unknown;
}

/** An error with a code from WIRE_ERROR_CODES: what sandboxd and the shared rules (paths.ts) throw. */
export class WireError extends Error {
  readonly code: WireErrorCode;
  readonly data: Record<string, unknown> | undefined;

  constructor(code: WireErrorCode, message: string, options: WireErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'WireError';
    this.code = code;
    this.data = options.data;
  }
}
