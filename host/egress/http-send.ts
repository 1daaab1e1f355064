// One hop of a fetch through the gateway sent: to the address its grant pinned (a `lookup` that
// answers only that address, and a fresh connection per request: no pooled socket reaches another
// address), its request (head and body) charged before it is sent; its response is http-hop.ts's.
// Invariants: a request that does not fit in the budget left is not sent at all
// (EGRESS_BUDGET_EXCEEDED, audited); a connection idle past idleTimeoutMs is cut; every failure is a
// SandboxError (EGRESS_FAILED with `data.reason: 'upstream'` for the upstream's), but the caller's
// abort, which stays its own.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { SandboxError } from '../errors.ts';
import { finish, type GatewayFetchInit, type Hop, type HttpDeps, onResponse } from './http-hop.ts';
import type { EgressCaller, Grant } from './types.ts';

/** A lookup that answers only the pinned address, whatever is asked. */
const pinnedLookup =
  (grant: Grant): LookupFunction =>
  (_hostname, options, callback) => {
    const cb = callback as (...args: unknown[]) => void;
    if ((options as { all?: boolean }).all) cb(null, [{ address: grant.ip, family: grant.family }]);
    else cb(null, grant.ip, grant.family);
  };

export async function send(
  deps: HttpDeps,
  caller: EgressCaller,
  grant: Grant,
  url: URL,
  method: string,
  headers: Headers,
  body: string | Uint8Array | null | undefined,
  init: GatewayFetchInit,
): Promise<Response> {
  const hop: Hop = {
    deps,
    caller,
    grant,
    url,
    method,
    init,
    started: Date.now(),
    bytesIn: 0,
    bytesOut: 0,
    settled: false,
  };
  const payload = body === null || body === undefined ? undefined : Buffer.from(body);
  // The request (its head and body) is charged before a byte of it leaves: one that does not fit
  // is not sent at all.
  const path = `${url.pathname}${url.search}`;
  const outgoing = requestHeadBytes(method, path, grant.host, headers) + (payload?.length ?? 0);
  if (!(await grant.lease.take(outgoing))) {
    finish(hop, undefined, 'egress budget used up');
    throw new SandboxError(
      'EGRESS_BUDGET_EXCEEDED',
      `The request of ${outgoing} bytes (head and body) is more than what is left of the tenant's egress budget this hour; nothing was sent.`,
      { data: { reason: 'bytes' } },
    );
  }
  hop.bytesOut = outgoing;
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
      finish(hop, undefined, error.message);
      reject(
        error instanceof SandboxError || init.signal?.aborted
          ? error
          : new SandboxError('EGRESS_FAILED', `Request to ${grant.host} failed: ${error.message}`, {
              cause: error,
              data: { reason: 'upstream' },
            }),
      );
    });
    request.once('response', (message) => onResponse(hop, message, resolve, reject));
    request.end(payload);
  });
}

/** Bytes of a request's head on the wire (request line, Host and the other headers, blank line). */
function requestHeadBytes(method: string, path: string, host: string, headers: Headers): number {
  let bytes = method.length + path.length + 12 + 8 + host.length + 2; // "M P HTTP/1.1\r\n", "Host: h\r\n"
  for (const [name, value] of headers) bytes += Buffer.byteLength(name) + Buffer.byteLength(value) + 4;
  return bytes + 2;
}
