// One hop of a fetch through the gateway, as it goes (http-send.ts sends it): what it is given, the
// bytes it moved, and its ending: the response's head charged when it arrives, its body streamed
// with its bytes charged as they arrive, and one audit event when it ends.
// Invariants: a hop is finished exactly once (its lease closed, its audit written), whatever ends it
// (an error, the end of its body, its close); past the budget or `maxBytes` the body stream errors;
// the audit shows the URL without userinfo or fragment, and the names of the credentials only.
import type { IncomingMessage } from 'node:http';
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

export interface HttpDeps {
  authorize(caller: EgressCaller, to: EgressTarget, url?: string): Promise<Grant>;
  audit: Audit;
  ca?: string | Buffer;
}

/** One hop under way: what it was given and what it moved. */
export interface Hop {
  deps: HttpDeps;
  caller: EgressCaller;
  grant: Grant;
  url: URL;
  method: string;
  init: GatewayFetchInit;
  started: number;
  bytesIn: number;
  bytesOut: number;
  settled: boolean;
}

const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** The URL as the audit shows it: no userinfo (refused anyway), no fragment. */
export const shown = (url: URL): string => `${url.protocol}//${url.host}${url.pathname}${url.search}`;

export function finish(hop: Hop, status: number | undefined, error?: string): void {
  if (hop.settled) return;
  hop.settled = true;
  const { grant, url } = hop;
  grant.lease.close();
  hop.deps.audit(hop.caller, {
    decision: 'allow',
    host: grant.host,
    port: grant.port,
    method: hop.method,
    url: shown(url),
    ip: grant.ip,
    ...(status === undefined ? {} : { status }),
    bytesIn: hop.bytesIn,
    bytesOut: hop.bytesOut,
    durationMs: Date.now() - hop.started,
    ...(grant.credentials.length === 0 ? {} : { credentials: grant.credentials.map((c) => c.name) }),
    ...(grant.withheld.length === 0 ? {} : { withheld: grant.withheld }),
    ...(error === undefined ? {} : { error }),
  });
}

/** The upstream's response: its head charged, its body streamed and charged, the Response made. */
export function onResponse(
  hop: Hop,
  message: IncomingMessage,
  resolve: (response: Response) => void,
  reject: (error: unknown) => void,
): void {
  const { grant, init, method } = hop;
  // The response's head counts as its body does: headers can carry as much as a body.
  const head = responseHeadBytes(message);
  hop.bytesIn += head;
  if (!grant.lease.charge(head)) {
    const error = new SandboxError(
      'EGRESS_BUDGET_EXCEEDED',
      'The tenant used its egress budget for this hour.',
      {
        data: { reason: 'bytes' },
      },
    );
    message.destroy(error);
    finish(hop, message.statusCode, 'egress budget used up');
    reject(error);
    return;
  }
  message.on('data', (chunk: Buffer) => {
    hop.bytesIn += chunk.length;
    if (!grant.lease.charge(chunk.length))
      message.destroy(
        new SandboxError('EGRESS_BUDGET_EXCEEDED', 'The tenant used its egress budget for this hour.', {
          data: { reason: 'bytes' },
        }),
      );
    else if (init.maxBytes !== undefined && hop.bytesIn > init.maxBytes)
      message.destroy(
        new SandboxError('EGRESS_FAILED', `The response from ${grant.host} is over ${init.maxBytes} bytes.`, {
          data: { reason: 'too large' },
        }),
      );
  });
  message.once('error', (error) => finish(hop, message.statusCode, error.message));
  message.once('end', () => finish(hop, message.statusCode));
  message.once('close', () => finish(hop, message.statusCode, message.complete ? undefined : 'closed early'));
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
    reject(new SandboxError('EGRESS_FAILED', `${grant.host} sent an unusable response.`, { cause: error }));
  }
}

/** Bytes of a response's head as it arrived (status line, raw headers, blank line). */
function responseHeadBytes(message: IncomingMessage): number {
  let bytes = 17 + (message.statusMessage?.length ?? 0); // "HTTP/1.1 200 OK\r\n"
  const raw = message.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2)
    bytes += Buffer.byteLength(raw[i] ?? '') + Buffer.byteLength(raw[i + 1] ?? '') + 4;
  return bytes + 2;
}
