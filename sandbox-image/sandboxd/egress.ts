// sandboxd's end of sandbox egress: the proxy address on the container's loopback (127.0.0.1:3128)
// that the agent's processes are pointed at (HTTP_PROXY and friends: proxyEnv), and `egressAccept`,
// the stream call by which the host takes one connection to it. sandboxd does not speak HTTP here:
// every byte of a connection goes to the host as it is, and the host (host/egress/proxy/) parses
// the request, asks the gateway and answers; so nothing a process in the container sends is
// interpreted by this process beyond moving it.
// The host keeps one egressAccept waiting per sandbox, plus one per open tunnel up to its limit; an
// accept that takes a connection says so at once (an empty data frame), so the host asks for the
// next before this client sent anything. A connection that arrives while none waits is queued
// (paused) for at most QUEUE_MS, then answered 503. Before the host ever asked (no control plane
// serving egress), a connection is answered 503 at once: a refusal, never a hang.
// Invariants: we send within the host's credit and write to the client only what the host sent;
// a cancelled call (or a new session) destroys its connection; at most MAX_QUEUED connections wait.

import { promises as fsp, readFileSync } from 'node:fs';
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { WireError } from '../../sandbox-wire/errors.ts';
import { DATA_HEADER_BYTES } from '../../sandbox-wire/protocol.ts';
import type { TransferIo } from './transfer.ts';
import { type Args, str } from './util.ts';

/** Where the proxy listens inside the container. */
export const PROXY_HOST = '127.0.0.1';
export const PROXY_PORT = 3128;
/** Connections waiting for the host to take them; more are answered 503 at once. */
const MAX_QUEUED = 64;
/** Longest a connection waits for the host to take it. */
const QUEUE_MS = 10_000;
/** The system's CA bundle (Debian's ca-certificates), the start of ours. */
const SYSTEM_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';
/** Largest CA certificate the host may hand us. */
const MAX_CA_BYTES = 64 * 1024;

/**
 * The proxy variables every process of the agent gets (exec.ts childEnv), once the proxy listens:
 * both spellings, since curl reads only the lower-case http_proxy and Python's requests prefers it.
 * Loopback stays direct: it is the container's own.
 */
export const proxyEnv: Record<string, string> = {};

/**
 * The CA bundle every TLS client of the agent is pointed at: the system's, plus the tenant's
 * interception CA once the host sends it (egressTrust). Root is read-only, so it lives in
 * sandboxd's state directory; one file serves OpenSSL (curl, git, Python), Node and pip.
 */
const setTrustEnv = (bundle: string): void => {
  Object.assign(proxyEnv, {
    SSL_CERT_FILE: bundle,
    CURL_CA_BUNDLE: bundle,
    REQUESTS_CA_BUNDLE: bundle,
    PIP_CERT: bundle,
    GIT_SSL_CAINFO: bundle,
    NODE_EXTRA_CA_CERTS: bundle,
    npm_config_cafile: bundle,
  });
};

const setProxyEnv = (port: number): void => {
  const url = `http://${PROXY_HOST}:${port}`;
  const noProxy = 'localhost,127.0.0.1,::1';
  Object.assign(proxyEnv, {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    NO_PROXY: noProxy,
    no_proxy: noProxy,
    // npm reads its own settings first; these match the variables above.
    npm_config_proxy: url,
    npm_config_https_proxy: url,
  });
};

/** A plain HTTP answer from sandboxd itself, then the connection is closed. */
const refuse = (socket: Socket, why: string): void => {
  const body = `${why}\n`;
  socket.on('error', () => {});
  socket.end(
    'HTTP/1.1 503 Service Unavailable\r\n' +
      `X-Dsh-Egress: unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  setTimeout(() => socket.destroy(), 1000).unref();
};

export const createEgressProxy = (options: {
  log: (line: string) => void;
  port?: number;
  stateDir: string;
}) => {
  const bundle = join(options.stateDir, 'ca-bundle.pem');
  const systemBundle = (): string => {
    try {
      return readFileSync(SYSTEM_BUNDLE, 'utf8');
    } catch {
      return '';
    }
  };
  /** Replaces the bundle atomically: a process reading it sees the old one or the new one. */
  const writeBundle = async (text: string): Promise<void> => {
    await fsp.mkdir(options.stateDir, { recursive: true });
    const tmp = `${bundle}.${process.pid}.tmp`;
    await fsp.writeFile(tmp, text, { mode: 0o644 });
    await fsp.rename(tmp, bundle);
  };
  const queue: Array<{ socket: Socket; timer: NodeJS.Timeout }> = [];
  const waiters: Array<(socket: Socket) => void> = [];
  let served = false; // the host asked for a connection at least once (this process's life)
  let server: Server | undefined;

  const onConnection = (socket: Socket): void => {
    socket.on('error', () => {});
    const waiter = waiters.shift();
    if (waiter) waiter(socket);
    else if (!served) refuse(socket, 'Egress is not served for this sandbox (no control plane took it).');
    else if (queue.length >= MAX_QUEUED)
      refuse(socket, 'Too many connections are waiting for egress; try again.');
    else queued(socket);
  };

  const queued = (socket: Socket): void => {
    const item = {
      socket,
      timer: setTimeout(() => {
        const at = queue.indexOf(item);
        if (at !== -1) queue.splice(at, 1);
        refuse(
          socket,
          `No egress tunnel became free within ${QUEUE_MS} ms (too many open connections, or the control plane is away); try again.`,
        );
      }, QUEUE_MS),
    };
    queue.push(item);
  };

  /** The next connection, or ABORTED when `signal` fires first. */
  const take = (signal: AbortSignal): Promise<Socket> => {
    served = true;
    for (;;) {
      const item = queue.shift();
      if (!item) break;
      clearTimeout(item.timer);
      if (!item.socket.destroyed) return Promise.resolve(item.socket);
    }
    return new Promise<Socket>((resolve, reject) => {
      const onAbort = (): void => {
        const at = waiters.indexOf(give);
        if (at !== -1) waiters.splice(at, 1);
        reject(new WireError('ABORTED', 'The egress accept was cancelled.'));
      };
      const give = (socket: Socket): void => {
        signal.removeEventListener('abort', onAbort);
        resolve(socket);
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      waiters.push(give);
    });
  };

  /** Client → host, within the host's credit; ends the stream at the client's end. */
  const upstream = async (socket: Socket, io: TransferIo): Promise<void> => {
    for await (const chunk of socket as AsyncIterable<Buffer>) {
      for (let at = 0; at < chunk.length; ) {
        const n = await io.sender.credit(chunk.length - at);
        const frame = io.sender.frame(n);
        chunk.copy(frame, DATA_HEADER_BYTES, at, at + n);
        io.sender.send(frame, n);
        at += n;
      }
    }
    io.sender.end();
  };

  /** Host → client, granting credit back as the client takes the bytes; ends the client's side at the host's end. */
  const downstream = async (socket: Socket, io: TransferIo): Promise<void> => {
    for (;;) {
      const parts = await io.receiver.next();
      if (parts === undefined) break;
      let n = 0;
      for (const p of parts) {
        n += p.length;
        if (!socket.write(p))
          await new Promise<void>((resolve) => {
            const done = (): void => {
              socket.off('drain', done);
              socket.off('close', done);
              resolve();
            };
            socket.on('drain', done);
            socket.on('close', done);
          });
        if (socket.destroyed) throw new WireError('ABORTED', 'The client closed the connection.');
      }
      io.receiver.consumed(n);
    }
    socket.end();
  };

  return {
    /** Starts listening; sets proxyEnv once it does. A port in use is logged, not fatal. */
    async listen(): Promise<void> {
      const port = options.port ?? PROXY_PORT;
      try {
        await writeBundle(systemBundle());
        setTrustEnv(bundle);
      } catch (e) {
        options.log(`egress proxy: cannot write ${bundle}: ${(e as Error).message}`);
      }
      return new Promise<void>((resolve) => {
        // allowHalfOpen: a client that ends its side (a request sent) still reads the answer.
        const listener = createServer({ allowHalfOpen: true, pauseOnConnect: true }, onConnection);
        server = listener;
        listener.once('error', (e) => {
          options.log(`egress proxy: cannot listen on ${PROXY_HOST}:${port}: ${e.message}`);
          resolve();
        });
        listener.listen({ host: PROXY_HOST, port }, () => {
          setProxyEnv((listener.address() as AddressInfo).port);
          resolve();
        });
      });
    },

    /** Adds the tenant's interception CA (PEM) to the bundle. */
    async egressTrust(args: Args) {
      const pem = str(args, 'pem');
      if (
        pem.length > MAX_CA_BYTES ||
        !/^-----BEGIN CERTIFICATE-----\n[A-Za-z0-9+/=\n]+-----END CERTIFICATE-----\n?$/.test(pem)
      )
        throw new WireError('INVALID_ARGUMENTS', 'pem must be one PEM certificate.');
      await writeBundle(`${systemBundle()}\n# dsh-sandbox egress interception CA\n${pem}`);
      return {};
    },

    /** The host takes one connection: its bytes both ways until both sides ended; answers the byte counts. */
    async egressAccept(io: TransferIo, signal: AbortSignal) {
      const socket = await take(signal);
      // An empty data frame first: "a connection arrived". The host asks for the next one at once
      // and times this one out on its own, whether or not its client ever sends a byte.
      io.sender.send(io.sender.frame(0), 0);
      const onAbort = (): void => {
        socket.destroy();
      };
      signal.addEventListener('abort', onAbort, { once: true });
      if (signal.aborted) onAbort();
      socket.resume();
      try {
        const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
        const both = Promise.all([upstream(socket, io), downstream(socket, io)]);
        both.catch(() => {}); // the loser of the race below
        // A client that vanishes ends the tunnel even while the host still has bytes for it.
        await Promise.race([both, closed]);
        if (signal.aborted) throw new WireError('ABORTED', 'The tunnel was cancelled.');
        return { bytesIn: socket.bytesRead, bytesOut: socket.bytesWritten };
      } finally {
        signal.removeEventListener('abort', onAbort);
        socket.destroy();
      }
    },

    close(): void {
      server?.close();
      for (const item of queue.splice(0)) {
        clearTimeout(item.timer);
        item.socket.destroy();
      }
    },
  };
};
