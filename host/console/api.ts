// How the console reaches the service: only through the public v1 API, in-process. Each request
// is a fresh Request to the app's own fetch with the session's key as its bearer, so it passes the
// same authentication, tenant scoping, limits and validation as a client's; the connection's env
// goes along, so the connection guard counts it for the tenant like any other.
import type { Context } from 'hono';

/** The control plane's own `app.fetch`. */
export type ApiFetch = (request: Request, env?: unknown) => Response | Promise<Response>;

/** A v1 answer that was not 2xx, with the API's stable error code. */
export class ApiFailure extends Error {
  override name = 'ApiFailure';
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const ORIGIN = 'http://console.internal';

export const apiRequest = (
  fetch: ApiFetch,
  c: Context,
  key: string,
  path: string,
  init: RequestInit = {},
): Promise<Response> => {
  const headers = new Headers(init.headers);
  headers.set('authorization', `Bearer ${key}`);
  const request = new Request(new URL(path, ORIGIN), { ...init, headers, signal: c.req.raw.signal });
  return Promise.resolve(fetch(request, c.env));
};

/** The failure a non-2xx answer stands for. */
export const failureOf = async (res: Response): Promise<ApiFailure> => {
  const body = (await res.json().catch(() => undefined)) as
    | { error?: { code?: string; message?: string } }
    | undefined;
  return new ApiFailure(
    res.status,
    body?.error?.code ?? 'UNKNOWN',
    body?.error?.message ?? `The API answered ${res.status}.`,
  );
};

export const apiJson = async <T>(
  fetch: ApiFetch,
  c: Context,
  key: string,
  path: string,
  init: RequestInit = {},
): Promise<T> => {
  const res = await apiRequest(fetch, c, key, path, init);
  if (!res.ok) throw await failureOf(res);
  return (await res.json()) as T;
};

/** A JSON POST through the API. */
export const apiPost = <T>(fetch: ApiFetch, c: Context, key: string, path: string, body: unknown) =>
  apiJson<T>(fetch, c, key, path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
