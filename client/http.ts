// The one way the client reaches the service: the typed openapi-fetch client for JSON routes and
// `request` for bytes and streams, both with the tenant's key and both through the same `fetch`
// (injectable: tests cut connections with it, browsers and proxies bring their own). A response
// that is not ok becomes a DshError here (errors.ts), so callers only see data or typed errors.
// Cancelling: a caller's AbortSignal always reaches fetch as `init.signal`, never only inside a
// Request. Node 24 links a Request's signal to the caller's through a weak reference, so once a
// garbage collection takes the Request (fetch copies it and lets it go) the abort is lost: the
// stream stays open on the service and the promise never settles. `fetch(request, { signal })`
// links the caller's signal to the copy fetch keeps for as long as the request lives.
import createClient, { type Client } from 'openapi-fetch';
import { DshError, errorFromBody, errorFromResponse } from './errors.ts';
import type { paths } from './openapi.ts';
import { DEFAULT_RETRY, type RetryOptions } from './retry.ts';

export interface DshClientOptions {
  /** Where the service listens, e.g. `http://127.0.0.1:7070`. */
  baseUrl: string;
  /** A tenant's API key (sent as `Authorization: Bearer`). */
  apiKey: string;
  /**
   * The fetch every request goes through. Default: the global fetch. The caller's AbortSignal comes
   * in `init.signal`: pass `init` on to fetch (`(request, init) => fetch(request, init)`), or
   * cancelling a call or a stream does not reach the connection.
   */
  fetch?: (request: Request, init?: RequestInit) => Promise<Response>;
  /**
   * The WebSocket class terminals use. Default: the global WebSocket (Node 22+, browsers); on Node
   * 20 and 21 pass one (the `ws` package's fits).
   */
  WebSocket?: WebSocketClass;
  /**
   * How call batches are retried with their Idempotency-Key (client/retry.ts: network errors, a
   * cut stream, 502, 503, 429 with Retry-After). Default: 4 attempts, 250 ms doubling to 5 s;
   * `false` sends each batch once.
   */
  retry?: RetryOptions | false;
}

/**
 * What terminals use of a WebSocket: the standard class's shape, written out so that the client's
 * declarations do not need the global WebSocket type (Node 20's type definitions have none).
 */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  readonly OPEN: number;
  send(data: string | Uint8Array): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  addEventListener(type: 'close', listener: (event: { code: number; reason: string }) => void): void;
  addEventListener(type: 'open' | 'error', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'open' | 'error', listener: () => void): void;
}

/** A WebSocket class: `new (url, protocols)`. */
export type WebSocketClass = new (url: string | URL, protocols?: string | string[]) => WebSocketLike;

export interface Transport {
  /** The typed client of every route (openapi-fetch over client/openapi.ts). */
  readonly api: Client<paths>;
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly WebSocket: WebSocketClass;
  /** How call batches are retried (attempts 1: never). */
  readonly retry: Required<RetryOptions>;
  /** One request to `path` (already encoded) with the key; a DshError unless the answer is ok. */
  request(path: string, init?: RequestInit): Promise<Response>;
  /**
   * The per-request options that make an openapi-fetch call cancellable by `signal` (openapi-fetch
   * would put it inside its Request only, see the header): spread them into the call's options.
   */
  cancelledBy(signal: AbortSignal | undefined): { fetch?: (request: Request) => Promise<Response> };
}

export function createTransport(options: DshClientOptions): Transport {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const doFetch =
    options.fetch ?? ((request: Request, init?: RequestInit) => globalThis.fetch(request, init));
  const authorization = `Bearer ${options.apiKey}`;
  return {
    api: createClient<paths>({ baseUrl, fetch: doFetch, headers: { Authorization: authorization } }),
    baseUrl,
    apiKey: options.apiKey,
    WebSocket: options.WebSocket ?? globalThis.WebSocket,
    retry:
      options.retry === false ? { ...DEFAULT_RETRY, attempts: 1 } : { ...DEFAULT_RETRY, ...options.retry },
    async request(path, init = {}) {
      const { signal, ...rest } = init;
      const headers = new Headers(rest.headers);
      headers.set('Authorization', authorization);
      // A streamed body needs half duplex (fetch's rule); bytes and strings do not mind it.
      const streamed = rest.body instanceof ReadableStream ? { duplex: 'half' as const } : {};
      const request = new Request(`${baseUrl}${path}`, { ...rest, ...streamed, headers });
      const response = await doFetch(request, signal == null ? {} : { signal });
      if (!response.ok) throw await errorFromResponse(response);
      return response;
    },
    cancelledBy(signal) {
      return signal === undefined ? {} : { fetch: (request: Request) => doFetch(request, { signal }) };
    },
  };
}

/** The data of an openapi-fetch answer, or its error thrown as a DshError. */
export async function ok<R extends { data?: unknown; error?: unknown; response: Response }>(
  answer: Promise<R>,
): Promise<Exclude<R['data'], undefined>> {
  const { data, error, response } = await answer;
  if (error !== undefined || !response.ok)
    throw errorFromBody(response.status, error, response.headers.get('retry-after'));
  return data as Exclude<R['data'], undefined>;
}

/** `path` with each `{name}` replaced by its encoded value. */
export function pathOf(template: keyof paths, values: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (_m, name: string) => {
    const value = values[name];
    if (value === undefined) throw new DshError('BAD_REQUEST', `No value for {${name}} in ${template}.`);
    return encodeURIComponent(value);
  });
}
