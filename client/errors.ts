// Errors as typed exceptions: every failure the service reports becomes a DshError carrying its
// stable code (the ErrorCode union of /openapi.json), the HTTP status, the error's structured
// `data` as the service sent it (on client errors: the current revision of a REVISION_CONFLICT, the
// limit of a CHILD_LIMIT_EXCEEDED, …) and the parsed body; a tool call that ran and failed becomes
// a DshToolError carrying its result. Responses are translated
// here once (errorFromResponse), so the rest of the client only throws what this module makes.
import type { ErrorCode, ToolResult } from './types.ts';

export interface DshErrorOptions {
  /** The HTTP status, when the error came from a response. */
  status?: number;
  /** The error's structured detail: the service's `error.data`, or the failed result of a DshToolError. */
  data?: unknown;
  /** The parsed body (JSON, or text) of the response the error came from. */
  body?: unknown;
  /** Seconds the service asked to wait (Retry-After) before trying again. */
  retryAfterS?: number;
  cause?: unknown;
}

/** An error the service reported, with its stable code. */
export class DshError extends Error {
  override name = 'DshError';
  /** The stable code (host/errors.ts on the server); switch on it, never on the message. */
  readonly code: ErrorCode;
  readonly status: number | undefined;
  /**
   * The service's structured detail of the error (`error.data` of its body: e.g. `currentRevision`,
   * `limit` and `max`, `issues`, `retryAfterS`); undefined when it sent none (it never does for
   * 5xx). For a DshToolError: the failed result.
   */
  readonly data: unknown;
  /** The parsed body of the response (JSON, or the text of a page that is not the service's). */
  readonly body: unknown;
  readonly retryAfterS: number | undefined;

  constructor(code: ErrorCode, message: string, options: DshErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.status = options.status;
    this.data = options.data;
    this.body = options.body;
    this.retryAfterS = options.retryAfterS;
  }
}

/** A tool call that ran and failed (`ok: false`); `result` is the whole result. */
export class DshToolError extends DshError {
  override name = 'DshToolError';
  readonly result: ToolResult;

  constructor(result: ToolResult) {
    super(result.error?.code ?? 'TOOL_FAILED', result.error?.message ?? `The call ${result.name} failed.`, {
      data: result,
    });
    this.result = result;
  }
}

/** `error` is a DshError, with code `code` when one is given (narrows the type). */
export function isDshError<C extends ErrorCode>(error: unknown, code?: C): error is DshError & { code: C } {
  return error instanceof DshError && (code === undefined || error.code === code);
}

/** The code of a response whose body says none (a proxy's page, an empty body). */
function codeOfStatus(status: number): ErrorCode {
  if (status === 401) return 'UNAUTHORIZED';
  if (status === 403) return 'FORBIDDEN';
  if (status === 404) return 'NOT_FOUND';
  if (status === 413) return 'PAYLOAD_TOO_LARGE';
  if (status === 429) return 'RATE_LIMITED';
  if (status === 503) return 'SHUTTING_DOWN';
  if (status === 504) return 'REQUEST_TIMEOUT';
  return status >= 500 ? 'INTERNAL' : 'BAD_REQUEST';
}

/** The error of a response status and its body (parsed JSON, text or nothing). */
export function errorFromBody(status: number, body: unknown, retryAfter?: string | null): DshError {
  const error = (body as { error?: { code?: unknown; message?: unknown; data?: unknown } } | null | undefined)
    ?.error;
  const code = typeof error?.code === 'string' ? (error.code as ErrorCode) : codeOfStatus(status);
  const message =
    typeof error?.message === 'string'
      ? error.message
      : `The service answered HTTP ${status}${typeof body === 'string' && body !== '' ? `: ${body.slice(0, 200)}` : ''}.`;
  const seconds = retryAfter == null ? Number.NaN : Number(retryAfter);
  return new DshError(code, message, {
    status,
    body,
    ...(error?.data === undefined ? {} : { data: error.data }),
    ...(Number.isFinite(seconds) ? { retryAfterS: seconds } : {}),
  });
}

/** The error of a response that is not ok; reads its body. */
export async function errorFromResponse(response: Response): Promise<DshError> {
  const text = await response.text().catch(() => '');
  let body: unknown = text;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return errorFromBody(response.status, body, response.headers.get('retry-after'));
}
