// A remote node, on the control plane's side (docs/nodes.md): SandboxNode over the node protocol
// (protocol.ts) to a `dsh-node` at an https URL, with this control plane's client certificate; the
// node's certificate must be signed by the cluster's CA and name the URL's host. `open` and `link`
// give the upgraded TLS socket itself as the pipe, so the sandboxd client (the control plane's own)
// speaks to sandboxd through it and validates every frame as it does locally.
// Invariants: a node that cannot be reached fails the call with NODE_UNREACHABLE naming the node
// (no call waits past its deadline); an error the node answers keeps its code; a remote node has no
// warm sessions (its pool's sandboxes are connected after `ensure`, like any other).

import { PassThrough } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { SandboxError } from '../../../errors.ts';
import type { SandboxLimits } from '../../types.ts';
import type { LinkOffer, NodeCapacity, SandboxdChannel, SandboxdPipe, SandboxNode } from '../types.ts';
import {
  ACCEPTED,
  HEADER_CHANNEL,
  HEADER_LINK,
  HEADER_LINK_TOKEN,
  PREFIX,
  PROTOCOL,
  pauseDoneOf,
  runtimesOf,
  snapshotDoneOf,
} from './protocol.ts';
import { createTransport, type Transport, type TransportOptions } from './transport.ts';

export type RemoteNodeOptions = TransportOptions;

export type RemoteNode = SandboxNode<never>;

interface Info {
  protocol: string;
  defaults: SandboxLimits;
  maxima: SandboxLimits;
  ready: number;
}

/** Connects (asks the node's info, which checks both certificates and the protocol) and gives the node. */
export async function connectRemoteNode(options: RemoteNodeOptions): Promise<RemoteNode> {
  const t = createTransport(options);
  const call = t.call.bind(t);
  const link = (channelId: string) => linkOf(t, options.name, channelId);
  const info = await call<Info>('info');
  if (info.protocol !== PROTOCOL)
    throw new SandboxError(
      'CONFIG_INVALID',
      `Node ${options.name} speaks ${info.protocol}, not ${PROTOCOL}.`,
    );
  let ready = info.ready;
  const agent = (agentId: string) => ({ agentId });
  return {
    name: options.name,
    defaults: info.defaults,
    maxima: info.maxima,
    pool: {
      get ready() {
        return ready;
      },
      async filled() {
        ready = (await call<{ ready: number }>('filled', {}, 10 * 60_000)).ready;
      },
    },
    ensure: (spec) => call('ensure', spec, 5 * 60_000),
    find: async (agentId) =>
      (
        await call<{ sandbox: null | { id: string; limits: SandboxLimits; tenantId?: string } }>(
          'find',
          agent(agentId),
        )
      ).sandbox ?? undefined,
    async open(agentId, openOptions = {}): Promise<SandboxdChannel> {
      const q = `agent=${encodeURIComponent(agentId)}${openOptions.restart ? '&restart=1' : ''}`;
      const { socket, headers } = await t.upgrade(`${PREFIX}open?${q}`);
      const id = String(headers[HEADER_CHANNEL] ?? '');
      return { ...socketPipe(socket), ...(headers[HEADER_LINK] === '1' ? { link: () => link(id) } : {}) };
    },
    state: async (agentId) =>
      (await call<{ state: 'running' | 'stopped' | 'absent' }>('state', agent(agentId))).state,
    stop: async (agentId) => {
      await call('stop', agent(agentId));
    },
    pause: async (agentId, mode) =>
      pauseDoneOf((await call<{ done?: unknown }>('pause', { ...agent(agentId), mode })).done),
    destroy: async (agentId) => {
      await call('destroy', agent(agentId), 5 * 60_000);
    },
    // A copy of a whole workspace image: minutes at worst on a slow disk.
    snapshot: async (agentId, id) =>
      snapshotDoneOf(await call('snapshot', { ...agent(agentId), id }, 10 * 60_000)),
    dropSnapshot: async (id) => {
      await call('dropSnapshot', { id });
    },
    usage: async (agentId, usageOptions) =>
      (await call<{ usage: null | never }>('usage', { ...agent(agentId), options: usageOptions ?? {} }))
        .usage ?? undefined,
    adopt: async (adoptOptions = {}) =>
      (
        await call<{ names: string[] }>(
          'adopt',
          {
            claim: [...(adoptOptions.claim ?? [])],
            assigned: [...(adoptOptions.assigned ?? new Map<string, string>())].flat(),
            replicas: adoptOptions.replicas !== undefined,
            ...(adoptOptions.known === undefined
              ? {}
              : { known: [...adoptOptions.known], knownAt: adoptOptions.knownAt ?? 0 }),
          },
          5 * 60_000,
        )
      ).names,
    capacity: async () => {
      const c = await call<NodeCapacity>('capacity');
      ready = c.pool.ready;
      return { ...c, runtimes: runtimesOf(c.runtimes) };
    },
    close: async () => t.close(),
  };
}

/** The TLS socket as a pipe. */
const socketPipe = (socket: TLSSocket): SandboxdPipe => {
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => {
    socket.once('close', () => resolve());
  });
  return { input: socket, output: socket, closed, close: () => socket.destroy() };
};

/** The link of an open channel: its token, and the link once the node says sandboxd dialled. */
async function linkOf(t: Transport, name: string, channelId: string): Promise<LinkOffer> {
  const { socket, headers } = await t.upgrade(`${PREFIX}link?channel=${encodeURIComponent(channelId)}`);
  const token = String(headers[HEADER_LINK_TOKEN] ?? '');
  let settled = false;
  const accepted = new Promise<SandboxdPipe>((resolve, reject) => {
    const gone = (): void => {
      settled = true;
      reject(new SandboxError('SANDBOX_UNAVAILABLE', `Node ${name}: the link was not made.`));
    };
    socket.once('close', gone);
    socket.on('data', function first(chunk: Buffer) {
      socket.off('data', first);
      socket.off('close', gone);
      settled = true;
      if (chunk[0] !== ACCEPTED) {
        socket.destroy();
        return gone();
      }
      // What came after the byte, then the rest, through a stream of its own (the socket's
      // flowing state is not handed over half-read).
      socket.pause();
      const input = new PassThrough();
      if (chunk.length > 1) input.write(chunk.subarray(1));
      socket.pipe(input);
      resolve({ ...socketPipe(socket), input });
    });
  });
  accepted.catch(() => {});
  return {
    token,
    accepted,
    close: () => {
      if (!settled) socket.destroy();
    },
  };
}
