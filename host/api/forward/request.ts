// Forwarding one HTTP request to the replica that owns its agent, and its answer back: method,
// path, query and end-to-end headers as the client sent them (the tenant's Authorization included,
// which the owner checks itself), the replica signature (./sign.ts) in place of any a client set,
// the request body streamed up and the answer streamed down as it comes (SSE event by event).
// Invariants: no body is buffered (backpressure flows both ways through the streams); a client
// that goes away aborts the upstream request, so the owner cancels the work as it would for its
// own client; an owner that cannot be reached answers 503 OWNER_UNREACHABLE with Retry-After: 1,
// after which the router re-decides. Measured (bench/forward.ts): node:http with a keep-alive
// Agent per target costs about 2.5x less per request than the built-in fetch, so that is used.
import { Agent, type ClientRequest, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';
import type { Context } from 'hono';
import { SandboxError } from '../../errors.ts';
import type { ApiEnv } from '../env.ts';
import { connectDeadline } from './deadline.ts';
import { FORWARD_HEADERS, forwardHeaders, signedTarget } from './sign.ts';

/** Where a request goes: the owner's base URL (DSH_REPLICA_URL) and its replica id. */
export interface ForwardTarget {
  url: string;
  replicaId: string;
  /**
   * Aborted when the owner is found gone (its lease ran out while the request was forwarded): the
   * request, or its streaming answer, ends at once as OWNER_UNREACHABLE instead of hanging on an
   * owner that was paused or cut off, and the client's retry reaches the family's next owner.
   */
  signal?: AbortSignal;
}

/** This replica, as it signs what it forwards. */
export interface ReplicaSigner {
  id: string;
  /** replicaKey(secretsKey) (./sign.ts). */
  key: Buffer;
}

/** Headers that describe one connection, not the request: never passed on (RFC 9110 7.6.1). */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'host',
  // Answered by this replica's own server already; the owner must not answer it a second time.
  'expect',
  'http2-settings',
]);

/** Whether a header stays on this hop: hop-by-hop, proxy-*, one the Connection header names, or ours. */
export const isHopHeader = (name: string, connectionNamed: ReadonlySet<string>): boolean =>
  HOP_BY_HOP.has(name) ||
  name.startsWith('proxy-') ||
  connectionNamed.has(name) ||
  FORWARD_HEADERS.includes(name);

/** The header names a Connection header lists (they are hop-by-hop too). */
export const connectionNamed = (value: string | null | undefined): Set<string> =>
  new Set(
    (value ?? '')
      .split(',')
      .map((name) => name.trim().toLowerCase())
      .filter((name) => name !== ''),
  );

export interface ForwardRequestOptions {
  replica: ReplicaSigner;
  /** The client's address as this replica counts it (client-address.ts), '' when none. */
  client: string;
  /** The keep-alive agent for the target's origin (createForwarder keeps one per target). */
  agent: Agent;
  /** How long connecting to the owner may take before it counts as unreachable. Default 2000 ms. */
  connectTimeoutMs?: number;
  now?: () => number;
}

const NULL_BODY_STATUS = new Set([101, 204, 205, 304]);

const unreachable = (target: ForwardTarget, cause: unknown): SandboxError =>
  new SandboxError(
    'OWNER_UNREACHABLE',
    `The replica that owns this agent (${target.replicaId}) did not answer; retry in a moment (with the same Idempotency-Key for calls).`,
    { data: { retryAfterS: 1, replicaId: target.replicaId }, cause },
  );

/**
 * Sends the request of `c` to `target` and resolves to the owner's answer, its body still streaming;
 * rejects with OWNER_UNREACHABLE when no answer came.
 */
export function forwardRequest(
  c: Context<ApiEnv>,
  target: ForwardTarget,
  options: ForwardRequestOptions,
): Promise<Response> {
  const raw = c.req.raw;
  const base = new URL(target.url);
  const path = signedTarget(raw.url);
  const named = connectionNamed(raw.headers.get('connection'));
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of raw.headers) {
    if (isHopHeader(name, named)) continue;
    // Headers joins repeated fields with ', ' except set-cookie; a request carries none of those.
    headers[name] = value;
  }
  Object.assign(
    headers,
    forwardHeaders(options.replica.key, {
      replicaId: options.replica.id,
      timestamp: (options.now ?? Date.now)(),
      method: raw.method,
      target: path,
      client: options.client,
    }),
  );
  headers.host = base.host;
  // One id for the request in both replicas' logs (the owner's request id takes a valid one given).
  const id = c.get('requestId');
  if (id !== undefined) headers['x-request-id'] = id;
  const body = raw.method === 'GET' || raw.method === 'HEAD' ? undefined : bodyOf(c);
  const send = base.protocol === 'https:' ? httpsRequest : httpRequest;
  const connectTimeoutMs = options.connectTimeoutMs ?? 2_000;

  return new Promise<Response>((resolve, reject) => {
    let settled = false;
    const fail = (error: unknown): void => {
      if (settled) return;
      settled = true;
      reject(
        raw.signal.aborted
          ? new SandboxError('ABORTED', 'The client went away; its forwarded request was cancelled.', {
              cause: error,
            })
          : unreachable(target, error),
      );
    };
    const attempt = (retried: boolean): void => {
      const upstream: ClientRequest = send({
        protocol: base.protocol,
        hostname: base.hostname.replace(/^\[(.*)\]$/, '$1'),
        port: base.port,
        method: raw.method,
        path,
        headers,
        agent: options.agent,
        signal: target.signal === undefined ? raw.signal : AbortSignal.any([raw.signal, target.signal]),
      });
      watchConnect(upstream, connectTimeoutMs);
      upstream.once('response', (res: IncomingMessage) => {
        if (settled) return res.destroy();
        settled = true;
        resolve(answerOf(res, raw.method));
      });
      upstream.once('error', (error: NodeJS.ErrnoException) => {
        // A kept-alive socket the owner closed just as it was reused: once more on a fresh one,
        // for requests without a body (nothing was consumed, nothing can have run twice).
        if (!retried && body === undefined && upstream.reusedSocket && error.code === 'ECONNRESET')
          return attempt(true);
        fail(error);
      });
      if (body !== undefined) {
        body.once('error', (error) => upstream.destroy(error));
        body.pipe(upstream);
      } else upstream.end();
    };
    attempt(false);
  });
}

/**
 * The request body as a node stream: the node request itself when nothing has touched its body
 * (no web stream between the client's socket and the owner's: about a quarter less CPU per forwarded
 * POST, bench/forward.ts), else the web body of the request as the app has it (a body limit's
 * counting stream, the console's in-process request).
 */
function bodyOf(c: Context<ApiEnv>): Readable | undefined {
  const raw = c.req.raw;
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  // @hono/node-server's own request for `incoming` is not a plain Request: anything that replaced
  // it (bodyLimit, the console) made one that is. Reading its `body` would start a web stream on
  // `incoming`, so the check comes first.
  const own = incoming !== undefined && Object.getPrototypeOf(raw) !== Request.prototype;
  if (own && !incoming.readableDidRead && !incoming.readableEnded && incoming.listenerCount('data') === 0)
    return incoming.headers['content-length'] === '0' ? undefined : incoming;
  return raw.body === null
    ? undefined
    : Readable.fromWeb(raw.body as import('node:stream/web').ReadableStream);
}

/** Gives up on a connection that is not made within `ms` (a reused one is made already). */
function watchConnect(upstream: ClientRequest, ms: number): void {
  upstream.once('socket', (socket) => {
    if (!socket.connecting) return;
    const deadline = connectDeadline(ms, () => {
      upstream.destroy(Object.assign(new Error(`connect timed out after ${ms} ms`), { code: 'ETIMEDOUT' }));
    });
    const done = (): void => deadline.cancel();
    socket.once('connect', done);
    socket.once('close', done);
  });
}

/** The owner's answer as a web Response whose body streams from the owner's socket. */
function answerOf(res: IncomingMessage, method: string): Response {
  const named = connectionNamed(res.headers.connection);
  const headers = new Headers();
  const rawHeaders = res.rawHeaders;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] as string).toLowerCase();
    if (isHopHeader(name, named)) continue;
    headers.append(name, rawHeaders[i + 1] as string);
  }
  const status = res.statusCode ?? 502;
  if (method === 'HEAD' || NULL_BODY_STATUS.has(status)) {
    res.resume();
    return new Response(null, { status, headers });
  }
  return new Response(Readable.toWeb(res) as ReadableStream<Uint8Array>, {
    status,
    statusText: res.statusMessage ?? '',
    headers,
  });
}

/**
 * A keep-alive agent for one target origin. No cap on its sockets: event streams and MCP sessions
 * hold theirs for as long as they are open, and a cap would queue every other request behind them
 * (the owner's connection admission bounds them); idle ones kept are bounded.
 */
export const agentFor = (url: string): Agent =>
  new URL(url).protocol === 'https:'
    ? new HttpsAgent({ keepAlive: true, maxFreeSockets: 64 })
    : new Agent({ keepAlive: true, maxFreeSockets: 64 });
