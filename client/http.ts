// The one way the client reaches the service: the typed openapi-fetch client for JSON routes and
// `request` for bytes and streams, both with the tenant's key and both through the same `fetch`
// (injectable: tests cut connections with it, browsers and proxies bring their own). A response
// that is not ok becomes a DshError here (errors.ts), so callers only see data or typed errors.
import createClient, { type Client } from 'openapi-fetch';
import { DshError, errorFromBody, errorFromResponse } from './errors.ts';
import type { paths } from './openapi.ts';
import { DEFAULT_RETRY, type RetryOptions } from './retry.ts';

export interface DshClientOptions {
  /** Where the service listens, e.g. `http://127.0.0.1:7070`. */
  baseUrl: string;
  /** A tenant's API key (sent as `Authorization: Bearer`). */
  apiKey: string;
  /** The fetch every request goes through. Default: the global fetch. */
  fetch?: (request: Request) => Promise<Response>;
  /** The WebSocket class terminals use. Default: the global WebSocket (Node 22+, browsers). */
  WebSocket?: typeof WebSocket;
  /**
   * How call batches are retried with their Idempotency-Key (client/retry.ts: network errors, a
   * cut stream, 502, 503, 429 with Retry-After). Default: 4 attempts, 250 ms doubling to 5 s;
   * `false` sends each batch once.
   */
  retry?: RetryOptions | false;
}

export interface Transport {
  /** The typed client of every route (openapi-fetch over client/openapi.ts). */
  readonly api: Client<paths>;
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly WebSocket: typeof WebSocket;
  /** How call batches are retried (attempts 1: never). */
  readonly retry: Required<RetryOptions>;
  /** One request to `path` (already encoded) with the key; a DshError unless the answer is ok. */
  request(path: string, init?: RequestInit): Promise<Response>;
}

export function createTransport(options: DshClientOptions): Transport {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const doFetch = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const authorization = `Bearer ${options.apiKey}`;
  return {
    api: createClient<paths>({ baseUrl, fetch: doFetch, headers: { Authorization: authorization } }),
    baseUrl,
    apiKey: options.apiKey,
    WebSocket: options.WebSocket ?? globalThis.WebSocket,
    retry:
      options.retry === false ? { ...DEFAULT_RETRY, attempts: 1 } : { ...DEFAULT_RETRY, ...options.retry },
    async request(path, init = {}) {
      const headers = new Headers(init.headers);
      headers.set('Authorization', authorization);
      // A streamed body needs half duplex (fetch's rule); bytes and strings do not mind it.
      const streamed = init.body instanceof ReadableStream ? { duplex: 'half' as const } : {};
      const response = await doFetch(new Request(`${baseUrl}${path}`, { ...init, ...streamed, headers }));
      if (!response.ok) throw await errorFromResponse(response);
      return response;
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
