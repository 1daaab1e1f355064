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
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import { SandboxError } from '../errors.ts';
import type { Audit } from './audit.ts';
import type { EgressCaller, EgressTarget, Grant } from './types.ts';

export interface GatewayFetchInit {
  method?: string;
  headers?: Record<string, string> | Headers | Array<[string, string]>;
  body?: string | Uint8Array | null;
  signal?: AbortSignal | null;
  /** Redirects followed before EGRESS_FAILED. Default 5; 0 returns the 3xx as it is. */
  maxRedirects?: number;
  /** Largest response body; past it the body stream errors with EGRESS_FAILED. Default: none. */
  maxBytes?: number;
  /** A connection idle this long is cut. Default 30000 ms; 0: none (long-lived streams). */
  idleTimeoutMs?: number;
}

interface HttpDeps {
  authorize(caller: EgressCaller, to: EgressTarget, url?: string): Promise<Grant>;
  audit: Audit;
  ca?: string | Buffer;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const NULL_BODY = new Set([101, 103, 204, 205, 304]);
/** Caller headers kept across an origin change (nothing that could carry a secret). */
const PORTABLE = new Set(['accept', 'accept-language', 'content-type', 'user-agent']);

/** The URL as the audit shows it: no userinfo (refused anyway), no fragment. */
const shown = (url: URL): string => `${url.protocol}//${url.host}${url.pathname}${url.search}`;

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

/** A lookup that answers only the pinned address, whatever is asked. */
const pinnedLookup =
  (grant: Grant): LookupFunction =>
  (_hostname, options, callback) => {
    const cb = callback as (...args: unknown[]) => void;
    if ((options as { all?: boolean }).all) cb(null, [{ address: grant.ip, family: grant.family }]);
    else cb(null, grant.ip, grant.family);
  };

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

function send(
  deps: HttpDeps,
  caller: EgressCaller,
  grant: Grant,
  url: URL,
  method: string,
  headers: Headers,
  body: string | Uint8Array | null | undefined,
  init: GatewayFetchInit,
): Promise<Response> {
  const started = Date.now();
  const payload = body === null || body === undefined ? undefined : Buffer.from(body);
  let bytesIn = 0;
  let bytesOut = 0;
  let settled = false;
  function finish(status: number | undefined, error?: string): void {
    if (settled) return;
    settled = true;
    grant.lease.close();
    deps.audit(caller, {
      decision: 'allow',
      host: grant.host,
      port: grant.port,
      method,
      url: shown(url),
      ip: grant.ip,
      ...(status === undefined ? {} : { status }),
      bytesIn,
      bytesOut,
      durationMs: Date.now() - started,
      ...(grant.credentials.length === 0 ? {} : { credentials: grant.credentials.map((c) => c.name) }),
      ...(grant.withheld.length === 0 ? {} : { withheld: grant.withheld }),
      ...(error === undefined ? {} : { error }),
    });
  }
  // The request (its head and body) is charged before a byte of it leaves: one that does not fit
  // is not sent at all.
  const path = `${url.pathname}${url.search}`;
  const outgoing = requestHeadBytes(method, path, grant.host, headers) + (payload?.length ?? 0);
  if (!grant.lease.take(outgoing)) {
    finish(undefined, 'egress budget used up');
    return Promise.reject(
      new SandboxError(
        'EGRESS_BUDGET_EXCEEDED',
        `The request of ${outgoing} bytes (head and body) is more than what is left of the tenant's egress budget this hour; nothing was sent.`,
        { data: { reason: 'bytes' } },
      ),
    );
  }
  bytesOut = outgoing;
  return new Promise<Response>((resolve, reject) => {
    const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)({
      protocol: url.protocol,
      hostname: grant.host,
      port: grant.port,
      path,
      method,
      headers: Object.fromEntries(headers),
      lookup: pinnedLookup(grant),
      agent: false,
      ...(deps.ca === undefined || url.protocol !== 'https:' ? {} : { ca: deps.ca }),
      ...(init.signal ? { signal: init.signal } : {}),
    });
    const idle = init.idleTimeoutMs ?? 30_000;
    if (idle > 0)
      request.setTimeout(idle, () =>
        request.destroy(new SandboxError('EGRESS_FAILED', `${grant.host} sent nothing for ${idle} ms.`)),
      );
    request.once('error', (error) => {
      finish(undefined, error.message);
      reject(
        error instanceof SandboxError || init.signal?.aborted
          ? error
          : new SandboxError('EGRESS_FAILED', `Request to ${grant.host} failed: ${error.message}`, {
              cause: error,
              data: { reason: 'upstream' },
            }),
      );
    });
    request.once('response', (message: IncomingMessage) => {
      // The response's head counts as its body does: headers can carry as much as a body.
      const head = responseHeadBytes(message);
      bytesIn += head;
      if (!grant.lease.charge(head)) {
        const error = new SandboxError(
          'EGRESS_BUDGET_EXCEEDED',
          'The tenant used its egress budget for this hour.',
          { data: { reason: 'bytes' } },
        );
        message.destroy(error);
        finish(message.statusCode, 'egress budget used up');
        reject(error);
        return;
      }
      message.on('data', (chunk: Buffer) => {
        bytesIn += chunk.length;
        if (!grant.lease.charge(chunk.length))
          message.destroy(
            new SandboxError('EGRESS_BUDGET_EXCEEDED', 'The tenant used its egress budget for this hour.', {
              data: { reason: 'bytes' },
            }),
          );
        else if (init.maxBytes !== undefined && bytesIn > init.maxBytes)
          message.destroy(
            new SandboxError(
              'EGRESS_FAILED',
              `The response from ${grant.host} is over ${init.maxBytes} bytes.`,
              {
                data: { reason: 'too large' },
              },
            ),
          );
      });
      message.once('error', (error) => finish(message.statusCode, error.message));
      message.once('end', () => finish(message.statusCode));
      message.once('close', () => finish(message.statusCode, message.complete ? undefined : 'closed early'));
      const status = message.statusCode ?? 502;
      const responseHeaders = new Headers();
      for (const [name, value] of Object.entries(message.headers)) {
        if (value === undefined) continue;
        for (const v of Array.isArray(value) ? value : [value]) responseHeaders.append(name, v);
      }
      const nullBody = NULL_BODY.has(status) || method === 'HEAD';
      if (nullBody) message.resume();
      const stream = nullBody ? null : (Readable.toWeb(message) as ReadableStream<Uint8Array>);
      try {
        resolve(
          new Response(stream, {
            status: status < 200 || status > 599 ? 502 : status,
            headers: responseHeaders,
          }),
        );
      } catch (error) {
        message.destroy();
        reject(
          new SandboxError('EGRESS_FAILED', `${grant.host} sent an unusable response.`, { cause: error }),
        );
      }
    });
    request.end(payload);
  });
}

/** Bytes of a request's head on the wire (request line, Host and the other headers, blank line). */
function requestHeadBytes(method: string, path: string, host: string, headers: Headers): number {
  let bytes = method.length + path.length + 12 + 8 + host.length + 2; // "M P HTTP/1.1\r\n", "Host: h\r\n"
  for (const [name, value] of headers) bytes += Buffer.byteLength(name) + Buffer.byteLength(value) + 4;
  return bytes + 2;
}

/** Bytes of a response's head as it arrived (status line, raw headers, blank line). */
function responseHeadBytes(message: IncomingMessage): number {
  let bytes = 17 + (message.statusMessage?.length ?? 0); // "HTTP/1.1 200 OK\r\n"
  const raw = message.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2)
    bytes += Buffer.byteLength(raw[i] ?? '') + Buffer.byteLength(raw[i + 1] ?? '') + 4;
  return bytes + 2;
}
