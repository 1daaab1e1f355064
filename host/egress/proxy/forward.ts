// A plain request from a sandbox (an absolute http:// URL) or one inside an intercepted TLS
// connection (origin-form, to the host of its CONNECT), sent through gateway.fetch with redirects
// left to the client (each hop it follows is a new request here, checked again), its body charged
// before it is sent, and only the tenant's credentials for that host added by the gateway (for plain
// HTTP, those that say `allowInsecure`); the answer is streamed back.
// Invariants: a plain request's body is read up to maxBodyBytes; hop-by-hop and proxy headers never
// travel on, either way; a client gone aborts the upstream request.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { SandboxError } from '../../errors.ts';
import type { EgressCaller } from '../types.ts';
import { badRequest, refusalOf, refuse } from './refusals.ts';
import type { ProxyState } from './state.ts';

/** Headers that belong to one connection (RFC 9110 7.6.1) or to the proxy: never forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
]);

async function readBody(req: IncomingMessage, max: number): Promise<Buffer | undefined> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > max)
      throw new SandboxError(
        'EGRESS_DENIED',
        `A plain-HTTP request body over ${max} bytes is refused; use HTTPS.`,
        {
          data: { reason: 'body too large' },
        },
      );
    parts.push(chunk);
  }
  return size === 0 ? undefined : Buffer.concat(parts);
}

export async function onRequest(s: ProxyState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { callers } = s;
  const caller = callers.get(req.socket);
  const target = req.url ?? '';
  if (!caller || !/^http:\/\//i.test(target)) {
    refuse(
      res,
      badRequest(
        /^https:\/\//i.test(target)
          ? 'HTTPS goes through CONNECT (set HTTPS_PROXY to this proxy as an http:// URL).'
          : 'This is an HTTP proxy: send absolute http:// URLs, or CONNECT for HTTPS.',
      ),
    );
    return;
  }
  await forward(s, req, res, caller, target);
}

/** A request inside an intercepted TLS connection: origin-form, to the host of its CONNECT. */
export async function onInterceptedRequest(
  s: ProxyState,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const { inside } = s;
  const at = inside.get(req.socket);
  const path = req.url ?? '';
  if (!at || !path.startsWith('/')) {
    refuse(res, badRequest('Inside a tunnel, send origin-form requests (a path).'));
    return;
  }
  await forward(s, req, res, at.caller, `${at.origin}${path}`);
}

/** One request through gateway.fetch (credentials added there), the answer streamed back. */
async function forward(
  s: ProxyState,
  req: IncomingMessage,
  res: ServerResponse,
  caller: EgressCaller,
  target: string,
) {
  const { gateway, maxBodyBytes, idleMs } = s;
  const headers: Array<[string, string]> = [];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i] as string;
    if (!HOP_BY_HOP.has(name.toLowerCase())) headers.push([name, req.rawHeaders[i + 1] as string]);
  }
  const ac = new AbortController();
  res.on('close', () => ac.abort());
  let response: Response;
  try {
    const body = await readBody(req, maxBodyBytes);
    response = await gateway.fetch(caller, target, {
      method: req.method ?? 'GET',
      headers,
      body: body ?? null,
      maxRedirects: 0,
      idleTimeoutMs: idleMs,
      signal: ac.signal,
    });
  } catch (error) {
    refuse(res, refusalOf(error));
    return;
  }
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of response.headers)
    if (!HOP_BY_HOP.has(name) || name === 'content-length') out[name] = value;
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) out['set-cookie'] = cookies;
  res.writeHead(response.status, out);
  if (!response.body) {
    res.end();
    return;
  }
  const body = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
  body.on('error', () => res.destroy());
  body.pipe(res);
}
