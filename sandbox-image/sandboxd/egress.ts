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
// This module wires the parts: egress-env.ts holds proxyEnv (re-exported here) and the CA bundle;
// egress-queue.ts hands connections to accepts, queues or refuses them; egress-tunnel.ts carries
// one connection's bytes both ways.

import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { WireError } from '../../sandbox-wire/errors.ts';
import { PROXY_HOST, setProxyEnv, setTrustEnv, systemBundle, writeBundle } from './egress-env.ts';
import { closeQueue, type EgressQueue, onConnection, take } from './egress-queue.ts';
import { tunnel } from './egress-tunnel.ts';
import type { TransferIo } from './transfer.ts';
import { type Args, str } from './util.ts';

export { PROXY_HOST, proxyEnv } from './egress-env.ts';
export const PROXY_PORT = 3128;
/** Largest CA certificate the host may hand us. */
const MAX_CA_BYTES = 64 * 1024;

export const createEgressProxy = (options: {
  log: (line: string) => void;
  port?: number;
  stateDir: string;
}) => {
  const bundle = join(options.stateDir, 'ca-bundle.pem');
  const state: EgressQueue = { queue: [], waiters: [], served: false, server: undefined };

  return {
    /** Starts listening; sets proxyEnv once it does. A port in use is logged, not fatal. */
    async listen(): Promise<void> {
      const port = options.port ?? PROXY_PORT;
      try {
        writeBundle(options.stateDir, bundle, systemBundle());
        setTrustEnv(bundle);
      } catch (e) {
        options.log(`egress proxy: cannot write ${bundle}: ${(e as Error).message}`);
      }
      return new Promise<void>((resolve) => {
        // allowHalfOpen: a client that ends its side (a request sent) still reads the answer.
        const listener = createServer({ allowHalfOpen: true, pauseOnConnect: true }, (socket) =>
          onConnection(state, socket),
        );
        state.server = listener;
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
      writeBundle(
        options.stateDir,
        bundle,
        `${systemBundle()}\n# dsh-sandbox egress interception CA\n${pem}`,
      );
      return {};
    },

    /** The host takes one connection: its bytes both ways until both sides ended; answers the byte counts. */
    async egressAccept(io: TransferIo, signal: AbortSignal) {
      return tunnel(await take(state, signal), io, signal);
    },

    close: (): void => closeQueue(state),
  };
};
