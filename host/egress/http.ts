// HTTP(S) through the gateway, as a fetch: each hop is authorized on its own (allowlist, resolved
// address, budget) and sent to the address that hop's grant pinned (a `lookup` that answers only
// that address, and a fresh connection per request: no pooled socket reaches another address).
// Redirects are followed by hand, at most `maxRedirects`, each target checked like the first URL;
// a 303 (and a 301/302 after POST) continues as GET without a body, as browsers do. The tenant's
// credentials for a hop's host are added to that hop only (they win over the caller's headers of
// the same name), and only over https unless the credential says `allowInsecure` (the grant holds
// just those: ./gateway.ts); the caller's own headers go to the first origin only, never across a
// redirect to another one. URLs with userinfo are refused (`http://allowed@evil/` is a trap, not a
// login).
// A request, its head (URL and headers) and its body, is charged before it is sent (one that does
// not fit in the budget left is not sent: EGRESS_BUDGET_EXCEEDED). The response's head is charged
// when it arrives; its body streams, its bytes charged as they arrive, and past `maxBytes` or the
// budget the stream errors. One audit event per hop, when it ends.
// This module follows the hops: http-send.ts sends one to its pinned address, http-hop.ts reads its
// response and ends it.
import { SandboxError } from '../errors.ts';
import { type GatewayFetchInit, type HttpDeps, shown } from './http-hop.ts';
import { send } from './http-send.ts';
import type { EgressCaller } from './types.ts';

export type { GatewayFetchInit } from './http-hop.ts';

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Caller headers kept across an origin change (nothing that could carry a secret). */
const PORTABLE = new Set(['accept', 'accept-language', 'content-type', 'user-agent']);

function parseTarget(input: string | URL): URL {
  let url: URL;
  try {
    url = new URL(String(input));
  } catch {
    throw new SandboxError('EGRESS_DENIED', `${JSON.stringify(String(input).slice(0, 200))} is not a URL.`, {
      data: { reason: 'malformed url' },
    });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new SandboxError('EGRESS_DENIED', `Only http and https URLs are fetched, not ${url.protocol}`, {
      data: { reason: 'scheme' },
    });
  if (url.username !== '' || url.password !== '')
    throw new SandboxError(
      'EGRESS_DENIED',
      'URLs with a user name or password are refused; the gateway adds credentials for the hosts the tenant names.',
      { data: { reason: 'userinfo in url' } },
    );
  return url;
}

const portOf = (url: URL): number =>
  url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);

export async function gatewayFetch(
  deps: HttpDeps,
  caller: EgressCaller,
  input: string | URL,
  init: GatewayFetchInit = {},
): Promise<Response> {
  const maxRedirects = init.maxRedirects ?? 5;
  let url = parseTarget(input);
  const origin = url.origin;
  let method = (init.method ?? 'GET').toUpperCase();
  let body: string | Uint8Array | null | undefined = init.body;
  const callerHeaders = new Headers(init.headers);
  for (let hop = 0; ; hop++) {
    init.signal?.throwIfAborted();
    const headers = new Headers();
    for (const [name, value] of callerHeaders)
      if (url.origin === origin || PORTABLE.has(name)) headers.set(name, value);
    const grant = await deps.authorize(
      caller,
      { host: url.hostname, port: portOf(url), method, tls: url.protocol === 'https:' },
      shown(url),
    );
    for (const credential of grant.credentials) headers.set(credential.header, credential.value);
    const response = await send(deps, caller, grant, url, method, headers, body, init);
    const location = response.headers.get('location');
    if (!REDIRECTS.has(response.status) || location === null || maxRedirects === 0) {
      // Where the body came from, after redirects (a constructed Response has no url of its own).
      Object.defineProperty(response, 'url', { value: shown(url) });
      return response;
    }
    await response.body?.cancel();
    if (hop >= maxRedirects)
      throw new SandboxError(
        'EGRESS_FAILED',
        `More than ${maxRedirects} redirects from ${shown(parseTarget(input))}.`,
        {
          data: { reason: 'redirects' },
        },
      );
    url = parseTarget(new URL(location, url));
    if (
      response.status === 303 ||
      ((response.status === 301 || response.status === 302) && method === 'POST')
    ) {
      method = method === 'HEAD' ? 'HEAD' : 'GET';
      body = undefined;
      callerHeaders.delete('content-type');
    }
  }
}
