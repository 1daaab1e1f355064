// The node protocol's transport on the control plane's side (protocol.ts): one JSON call, and one
// upgraded stream, to a node at an https URL with this control plane's client certificate; the
// node's certificate must be signed by the cluster's CA, name the URL's host, and carry the role of
// the node dialled (roles.ts), so no other node's certificate stands in for it.
// Invariants: a node whose certificate is not the node's fails the call with
// NODE_CERTIFICATE_REFUSED naming the node, before a byte of the call is sent; a node that cannot
// be reached, or does not answer within the deadline, fails the call with NODE_UNREACHABLE naming
// the node (`data.node`); an error the node answers keeps its code; an answer that is not the
// protocol's is SANDBOX_UNAVAILABLE too.

import type { IncomingMessage } from 'node:http';
import { request } from 'node:https';
import { checkServerIdentity, type PeerCertificate, type TLSSocket } from 'node:tls';
import { isErrorCode, SandboxError } from '../../../errors.ts';
import { HEADER_INSTANCE, type Method, PREFIX, PROTOCOL } from './protocol.ts';
import { nodeRefusal } from './roles.ts';

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
}

export function createTransport(options: TransportOptions): Transport {
  const base = new URL(options.url);
  if (base.protocol !== 'https:')
    throw new SandboxError('CONFIG_INVALID', `Node ${options.name}: ${options.url} is not https.`);
  const timeoutMs = options.timeoutMs ?? 30_000;
  const unreachable = (e: unknown): SandboxError =>
    e instanceof SandboxError
      ? e
      : new SandboxError('NODE_UNREACHABLE', `Node ${options.name} is unreachable: ${(e as Error).message}`, {
          cause: e,
          data: { node: options.name },
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
    agent: false as const,
    // Called once the CA's signature was checked, before the request is sent.
    checkServerIdentity: (host: string, cert: PeerCertificate): Error | undefined =>
      checkServerIdentity(host, cert) ?? nodeRefusal(options.name, cert),
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
      try {
        const res = await new Promise<IncomingMessage>((resolve, reject) => {
          const req = request(
            target(`${PREFIX}${method}`, 'POST', ms, { 'content-type': 'application/json' }),
          );
          req.once('response', resolve);
          req.once('error', reject);
          req.once('timeout', () => req.destroy(new Error(`no answer within ${ms} ms`)));
          req.end(JSON.stringify(args));
        });
        const chunks: Buffer[] = [];
        for await (const chunk of res as AsyncIterable<Buffer>) chunks.push(chunk);
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200) throw errorOf(text);
        return JSON.parse(text || '{}') as T;
      } catch (e) {
        throw unreachable(e);
      }
    },
    upgrade: (path) =>
      new Promise((resolve, reject) => {
        const req = request(target(path, 'GET', timeoutMs, { connection: 'Upgrade', upgrade: PROTOCOL }));
        req.once('upgrade', (res: IncomingMessage, socket: TLSSocket, head: Buffer) => {
          socket.setTimeout(0);
          socket.setNoDelay(true);
          if (head.length > 0) socket.unshift(head);
          resolve({ socket, headers: res.headers });
        });
        req.once('response', (res: IncomingMessage) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.once('end', () => reject(errorOf(Buffer.concat(chunks).toString('utf8'))));
        });
        req.once('error', (e) => reject(unreachable(e)));
        req.once('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
        req.end();
      }),
  };
}

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
