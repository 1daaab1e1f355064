// The one place where errors become HTTP responses: `{ error: { code, message, data? } }` with the
// status from httpStatusOf(code). `data` is the SandboxError's own structured detail (the current
// revision of a REVISION_CONFLICT, the limit of a CHILD_LIMIT_EXCEEDED, the issues of a
// BAD_REQUEST), sent only with client errors (4xx): what a 5xx carries describes the service's
// insides (container ids, store codes, free disk), so it stays on the server. Never the
// cause or the stack; data that is not plain JSON or is over PUBLIC_DATA_BYTES is left out.
// Hono's own HTTPExceptions (401 from auth, 413 from bodyLimit) keep their headers
// (WWW-Authenticate). Unexpected errors answer INTERNAL without internals; the
// request id ties the response to the server log line.
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { type ErrorCode, httpStatusOf, isSandboxError } from '../errors.ts';

const CODE_BY_STATUS: Record<number, ErrorCode> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  413: 'PAYLOAD_TOO_LARGE',
  429: 'RATE_LIMITED',
  503: 'SHUTTING_DOWN',
  504: 'REQUEST_TIMEOUT',
};

/** The most bytes of JSON an error body's `data` may take; more is left out, not cut. */
export const PUBLIC_DATA_BYTES = 16 * 1024;

export interface ErrorBodyJson {
  error: { code: string; message: string; data?: Record<string, unknown> };
}

export const errorBody = (code: string, message: string, data?: Record<string, unknown>): ErrorBodyJson => ({
  error: { code, message, ...(data === undefined ? {} : { data }) },
});

/** The data of `error` that a client may see (see the header), as plain JSON; undefined when none. */
export const publicData = (error: unknown): Record<string, unknown> | undefined => {
  if (!isSandboxError(error) || error.data === undefined || httpStatusOf(error.code) >= 500) return undefined;
  try {
    const text = JSON.stringify(error.data);
    if (text === undefined || Buffer.byteLength(text) > PUBLIC_DATA_BYTES) return undefined;
    const plain: unknown = JSON.parse(text);
    return plain !== null && typeof plain === 'object' && !Array.isArray(plain)
      ? (plain as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined; // a cycle or a BigInt: not JSON, not sent
  }
};

/** The body of an error answer (HTTP or an SSE `error` event): unknown errors say INTERNAL only. */
export const errorBodyOf = (error: unknown): ErrorBodyJson =>
  isSandboxError(error)
    ? errorBody(error.code, error.message, publicData(error))
    : errorBody('INTERNAL', 'Internal error; the server log has the details.');

export interface ErrorHandlerOptions {
  /** Told about every error response (metrics, logs). */
  onError?: (code: ErrorCode, status: number, error: unknown) => void;
}

export const errorHandler =
  (options: ErrorHandlerOptions = {}) =>
  (error: Error, c: Context): Response => {
    let code: ErrorCode;
    let status: number;
    let message: string;
    let headers: Headers | undefined;
    let data: Record<string, unknown> | undefined;
    if (isSandboxError(error)) {
      data = publicData(error);
      code = error.code;
      status = httpStatusOf(code);
      message = error.message;
      headers = new Headers();
      const retry = error.data?.retryAfterS;
      if (typeof retry === 'number') headers.set('Retry-After', String(retry));
      const challenge = error.data?.wwwAuthenticate;
      if (typeof challenge === 'string') headers.set('WWW-Authenticate', challenge);
    } else if (error instanceof HTTPException) {
      status = error.status;
      code = CODE_BY_STATUS[status] ?? (status >= 500 ? 'INTERNAL' : 'BAD_REQUEST');
      message = error.message || `HTTP ${status}`;
      headers = error.getResponse().headers;
    } else {
      code = 'INTERNAL';
      status = 500;
      message = `Internal error (request ${c.get('requestId') ?? 'unknown'}); the server log has the details.`;
      process.stderr.write(
        `[${c.get('requestId') ?? '-'}] ${c.req.method} ${c.req.path}: ${error.stack ?? String(error)}\n`,
      );
    }
    options.onError?.(code, status, error);
    const response = c.json(errorBody(code, message, data), status as ContentfulStatusCode);
    headers?.forEach((value, key) => {
      if (key.toLowerCase() !== 'content-type' && key.toLowerCase() !== 'content-length')
        response.headers.set(key, value);
    });
    return response;
  };
