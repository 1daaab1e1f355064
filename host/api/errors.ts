// The one place where errors become HTTP responses: `{ error: { code, message } }` with the status
// from httpStatusOf(code). Hono's own HTTPExceptions (401 from auth, 413 from bodyLimit) keep
// their headers (WWW-Authenticate). Unexpected errors answer INTERNAL without internals; the
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

export const errorBody = (code: string, message: string) => ({ error: { code, message } });

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
    if (isSandboxError(error)) {
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
    const response = c.json(errorBody(code, message), status as ContentfulStatusCode);
    headers?.forEach((value, key) => {
      if (key.toLowerCase() !== 'content-type' && key.toLowerCase() !== 'content-length')
        response.headers.set(key, value);
    });
    return response;
  };
