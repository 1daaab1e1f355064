// The node protocol's transport on the control plane's side (protocol.ts): one JSON call, and one
// upgraded stream, to a node at an https URL with this control plane's client certificate; the
// node's certificate must be signed by the cluster's CA, name the URL's host, and carry the role of
// the node dialled (roles.ts), so no other node's certificate stands in for it.
// Invariants: this control plane's own certificate must name its instance (roles.ts: the node
// refuses any other), checked when the transport is made, so a start with the wrong certificate
// stops with a message that says which instance to name; a node whose certificate is not the node's fails the call with
// NODE_CERTIFICATE_REFUSED naming the node, before a byte of the call is sent; a node that cannot
// be reached, or does not answer within the deadline, fails the call with NODE_UNREACHABLE naming
// the node (`data.node`); an error the node answers keeps its code; an answer that is not the
// protocol's is SANDBOX_UNAVAILABLE too.
// Connections: calls go over kept-alive TLS connections (one agent per node), and every new
// connection, an upgrade's included, resumes a cached TLS session, so the health probe every 2 s
// and an agent's ensure/open/link do not each pay a full handshake (bench/nodes.ts). A resumed
// session skips the certificate checks, which is sound: only the server that was checked in full
// holds the session it resumes. The client lets an idle connection go (IDLE_MS) before the node
// does (server.ts KEEP_ALIVE_MS); a call that still meets a reused connection closed under it is
// sent once more on a new one.

import { X509Certificate } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Agent, request } from 'node:https';
import { checkServerIdentity, type PeerCertificate, type TLSSocket } from 'node:tls';
import { isErrorCode, SandboxError } from '../../../errors.ts';
import { HEADER_INSTANCE, MAX_ANSWER_BYTES, type Method, PREFIX, PROTOCOL } from './protocol.ts';
import { instanceRefusal, nodeRefusal } from './roles.ts';

export interface TransportOptions {
  /** The node's name (DSH_NODES `<name>=<url>`). */
  name: string;
  /** `https://host:port`. */
  url: string;
  /** The control plane's instance (the store's instanceId). */
  instance: string;
  /** PEM: this control plane's certificate and key, and the cluster's CA. */
  cert: string;
  key: string;
  ca: string;
  /** Deadline of a call (unless the call says otherwise) and of an upgrade's answer. Default 30 s. */
  timeoutMs?: number;
}

export interface Transport {
  call<T>(method: Method, args?: object, ms?: number): Promise<T>;
  /** An upgraded stream (the socket, its 101 headers). */
  upgrade(path: string): Promise<{ socket: TLSSocket; headers: IncomingMessage['headers'] }>;
  /** Closes the kept-alive connections (streams already upgraded stay). */
  close(): void;
}

/** CONFIG_INVALID unless this control plane's certificate names its instance (which the node checks too). */
function ownInstanceCheck(options: TransportOptions): void {
  let subjectaltname: string | undefined;
  try {
    subjectaltname = new X509Certificate(options.cert).subjectAltName;
  } catch (e) {
    throw new SandboxError(
      'CONFIG_INVALID',
      `DSH_NODE_CERT is not a PEM certificate (${(e as Error).message}).`,
    );
  }
  const refusal = instanceRefusal(options.instance, { subjectaltname: subjectaltname ?? '' });
  if (refusal !== undefined)
    throw new SandboxError('CONFIG_INVALID', `DSH_NODE_CERT: ${refusal.message}`, {
      data: { ...refusal.data, node: options.name },
    });
}

export function createTransport(options: TransportOptions): Transport {
  const base = new URL(options.url);
  if (base.protocol !== 'https:')
    throw new SandboxError('CONFIG_INVALID', `Node ${options.name}: ${options.url} is not https.`);
  ownInstanceCheck(options);
  const timeoutMs = options.timeoutMs ?? 30_000;
  const unreachable = (e: unknown): SandboxError =>
    e instanceof SandboxError
      ? e
      : new SandboxError('NODE_UNREACHABLE', `Node ${options.name} is unreachable: ${(e as Error).message}`, {
          cause: e,
          data: { node: options.name },
        });
  const agent = new Agent({
    keepAlive: true,
    maxFreeSockets: 4,
    timeout: IDLE_MS,
    ca: options.ca,
    cert: options.cert,
    key: options.key,
    // Called once the CA's signature was checked, before a request is sent. Given to the agent,
    // not to each request: a request's own checkServerIdentity keeps its socket out of the pool.
    checkServerIdentity: (host: string, cert: PeerCertificate): Error | undefined =>
      checkServerIdentity(host, cert) ?? nodeRefusal(options.name, cert),
  });
  const target = (path: string, method: string, ms: number, headers: Record<string, string>) => ({
    host: base.hostname,
    port: Number(base.port || 443),
    path,
    method,
    timeout: ms,
    ca: options.ca,
    cert: options.cert,
    key: options.key,
    agent,
    // Called once the CA's signature was checked, before the request is sent.
    headers: { [HEADER_INSTANCE]: options.instance, ...headers },
  });
  const errorOf = (text: string): SandboxError => {
    try {
      return remoteError(options.name, (JSON.parse(text) as { error?: never }).error);
    } catch {
      return remoteError(options.name, undefined);
    }
  };

  return {
    async call<T>(method: Method, args: object = {}, ms = timeoutMs): Promise<T> {
      // The whole call, answer included, within `ms`: the socket's own timeout is an idle one,
      // which a node that trickles its answer a byte at a time would never let run out.
      const deadline = new AbortController();
      const timer = setTimeout(() => deadline.abort(new Error(`no answer within ${ms} ms`)), ms);
      const send = (): Promise<IncomingMessage> =>
        new Promise<IncomingMessage>((resolve, reject) => {
          const req = request({
            ...target(`${PREFIX}${method}`, 'POST', ms, { 'content-type': 'application/json' }),
            signal: deadline.signal,
          });
          req.once('response', resolve);
          req.once('error', (e) => reject(Object.assign(e, { reused: req.reusedSocket })));
          req.once('timeout', () => req.destroy(new Error(`no answer within ${ms} ms`)));
          req.end(JSON.stringify(args));
        });
      try {
        const res = await send().catch((e: unknown) => (closedUnder(e) ? send() : Promise.reject(e)));
        const text = await answerOf(res, options.name);
        if (res.statusCode !== 200) throw errorOf(text);
        return JSON.parse(text || '{}') as T;
      } catch (e) {
        throw unreachable(deadline.signal.aborted ? deadline.signal.reason : e);
      } finally {
        clearTimeout(timer);
      }
    },
    upgrade(path) {
      const once = (): Promise<{ socket: TLSSocket; headers: IncomingMessage['headers'] }> =>
        new Promise((resolve, reject) => {
          const req = request(target(path, 'GET', timeoutMs, { connection: 'Upgrade', upgrade: PROTOCOL }));
          req.once('upgrade', (res: IncomingMessage, socket: TLSSocket, head: Buffer) => {
            socket.setTimeout(0);
            socket.setNoDelay(true);
            if (head.length > 0) socket.unshift(head);
            resolve({ socket, headers: res.headers });
          });
          req.once('response', (res: IncomingMessage) => {
            // A refusal trickled a byte at a time would never trip the socket's idle timeout.
            const late = setTimeout(
              () => res.destroy(new Error(`no answer within ${timeoutMs} ms`)),
              timeoutMs,
            );
            answerOf(res, options.name)
              .then((text) => reject(errorOf(text)), reject)
              .finally(() => clearTimeout(late));
          });
          req.once('error', (e) => reject(Object.assign(e, { reused: req.reusedSocket })));
          req.once('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
          req.end();
        });
      return once()
        .catch((e: unknown) => (closedUnder(e) ? once() : Promise.reject(e)))
        .catch((e: unknown) => Promise.reject(unreachable(e)));
    },
    close: () => agent.destroy(),
  };
}

/**
 * A node's answer as text, at most MAX_ANSWER_BYTES: past that the answer is dropped unread (its
 * connection closed) and the call fails with SANDBOX_UNAVAILABLE naming the node, so a hostile
 * node cannot make the control plane hold (or fail to make a string of) an answer of any size.
 */
async function answerOf(res: IncomingMessage, name: string): Promise<string> {
  const chunks: Buffer[] = [];
  // A declared length over the bound fails before a byte is read.
  let size = Number(res.headers['content-length'] ?? 0) > MAX_ANSWER_BYTES ? Number.POSITIVE_INFINITY : 0;
  if (size <= MAX_ANSWER_BYTES)
    for await (const chunk of res as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_ANSWER_BYTES) break;
      chunks.push(chunk);
    }
  if (size <= MAX_ANSWER_BYTES) return Buffer.concat(chunks).toString('utf8');
  res.destroy();
  throw new SandboxError(
    'SANDBOX_UNAVAILABLE',
    `Node ${name} answered more than ${MAX_ANSWER_BYTES} bytes; the answer was dropped.`,
    { data: { node: name } },
  );
}

/** How long an idle kept-alive connection to a node stays open (below the node's KEEP_ALIVE_MS). */
const IDLE_MS = 30_000;

/**
 * A reused kept-alive connection the node had closed as the call went out (nothing of the call
 * was answered): safe to send again, once, on a new connection.
 */
const closedUnder = (e: unknown): boolean => {
  const { reused, code } = e as { reused?: boolean; code?: string };
  return reused === true && (code === 'ECONNRESET' || code === 'EPIPE');
};

/** The node's error with its code, or SANDBOX_UNAVAILABLE when the answer is not one. */
export const remoteError = (
  name: string,
  error: { code: unknown; message: string; data?: unknown } | undefined,
): SandboxError =>
  error !== undefined && isErrorCode(error.code) && typeof error.message === 'string'
    ? new SandboxError(error.code, error.message, { data: { ...(error.data as object), node: name } })
    : new SandboxError(
        'SANDBOX_UNAVAILABLE',
        `Node ${name} answered something that is not the node protocol.`,
        {
          data: { node: name },
        },
      );
