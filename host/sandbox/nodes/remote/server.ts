// The node agent's server (`dsh-node`, docs/nodes.md): the node protocol (protocol.ts) over HTTPS
// with mutual TLS, in front of one SandboxNode per control-plane instance (the embedded node over
// this machine's engine). The two byte streams are spliced: the upgraded TLS socket to the
// sandbox's attach stream or to its link socket; the node never reads them. close() ends every
// channel and link at once (the node agent's SIGTERM), so it never waits on a control plane.
// Invariants: a connection whose client certificate the cluster's CA did not sign is refused during
// the TLS handshake, before any request is read; one whose certificate is not a control plane's
// (roles.ts: a node agent's, or one with no role) gets NODE_CERTIFICATE_REFUSED to every request
// and upgrade, and the node is never asked; each refusal is reported (`onRefused`); a request
// whose `x-dsh-instance` its certificate does not name (roles.ts `instanceRefusal`) gets
// NODE_CERTIFICATE_REFUSED before its body is read and before any node is made or asked (reported
// once per connection and instance, at most REPORTED_MAX a connection: `onForbidden`); a channel is known by its id only while it is
// open, and a link is offered only on a channel this server opened, to the instance that opened it; a pooled sandbox's channel goes
// to one claiming stream only (the pool keeps the claim: docker/pool.ts), and its end discards the
// pooled sandbox (the pool makes another); a pool's ready count is answered as the caller can use
// it (unclaimed and its own claims: PooledChannels.poolFor); the TLS socket's end never ends
// the sandbox's stdin (a control plane going away detaches, it does not close sandboxd's input).
// Idle polling (`idlePoll`, host/idle-poll.ts): a call's arrival and its answer, and every chunk
// spliced either way, touch it; the control plane's own rounds (`capacity`, `pooled`, `info`,
// `filled`: its health probe and warm sessions) do not, so a node with nothing flowing lets its
// CPUs halt, and `capacity` answers the state as calls left it.

import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { PeerCertificate, TLSSocket } from 'node:tls';
import { SandboxError } from '../../../errors.ts';
import type { IdlePoll, IdlePollState } from '../../../idle-poll.ts';
import { resolveLimits } from '../../docker/config.ts';
import { snapshotsOf } from '../snapshots-of.ts';
import type { AdoptAsking, PooledChannels, SandboxdChannel, SandboxdPipe, SandboxNode } from '../types.ts';
import {
  ACCEPTED,
  agentIdOf,
  errorBody,
  FEATURE_POOLED,
  HEADER_CHANNEL,
  HEADER_CLAIM,
  HEADER_INSTANCE,
  HEADER_LINK,
  HEADER_LINK_TOKEN,
  MAX_BODY_BYTES,
  METHODS,
  type Method,
  objectOf,
  PREFIX,
  PROTOCOL,
  pauseModeOf,
  pooledIdOf,
  pooledOf,
  runtimeOf,
  snapshotIdOf,
  stringsOf,
} from './protocol.ts';
import {
  controlPlaneRefusal,
  describeCert,
  INSTANCE_ID,
  INSTANCE_ID_TEXT,
  instanceRefusal,
  instancesOf,
} from './roles.ts';
import { answerSweep } from './snapshot-sweep.ts';

export interface NodeServerOptions {
  host: string;
  port: number;
  /** PEM: this node's certificate and key, and the cluster's CA (which signs control planes' certificates). */
  cert: string;
  key: string;
  ca: string;
  /** The node for a control-plane instance (made on first use; the instance is checked there). */
  nodeFor: (instance: string) => Served;
  onError?: (error: unknown) => void;
  /** A connection refused: its certificate's role (NODE_CERTIFICATE_REFUSED) or its TLS handshake. */
  onRefused?: (from: string, reason: string) => void;
  /**
   * A request refused because its certificate does not name the instance it asked for
   * (NODE_CERTIFICATE_REFUSED): once per connection and instance. `instance` is checked (4-16
   * lowercase letters or digits); `reason` names the certificate (its CN comes from the peer).
   */
  onForbidden?: (from: string, instance: string, reason: string) => void;
  /** Idle CPUs poll while calls are relayed (serve-node.ts makes it from DSH_IDLE_POLL); its state rides on `capacity`. Default: none. */
  idlePoll?: Pick<IdlePoll, 'touch' | 'state'>;
}

export interface NodeServer {
  readonly port: number;
  close(): Promise<void>;
}

/** A node as served: pooled channels where it has them (the embedded node over the engine does). */
type Served = SandboxNode<unknown> & Partial<PooledChannels>;
/** Open channels by id, each with the instance's node that opened it (only that instance links to it). */
type Channels = Map<string, { channel: SandboxdChannel; owner: Served }>;

/** The most refused instances reported on one connection. */
const REPORTED_MAX = 16;
/** How long an idle control-plane connection is kept (longer than the client keeps it: transport.ts). */
const KEEP_ALIVE_MS = 65_000;
/** The calls a control plane makes on its own schedule (health probes, warm sessions): not activity. */
const ROUNDS: ReadonlySet<string> = new Set<Method>(['info', 'capacity', 'pooled', 'filled']);
const nothing = (): void => {};

export async function serveNode(options: NodeServerOptions): Promise<NodeServer> {
  const onError = options.onError ?? (() => {});
  const channels: Channels = new Map();
  const onRefused = options.onRefused ?? (() => {});
  const onForbidden = options.onForbidden ?? (() => {});
  const poll = options.idlePoll;
  const touch = poll === undefined ? nothing : () => poll.touch();
  // The role is checked once per connection, when its handshake is done (the CA's signature and
  // the certificate's purpose were checked in it); a refused connection is answered, not served.
  // An accepted one keeps its certificate, whose instances each request is checked against.
  const refusals = new WeakMap<object, SandboxError>();
  const peers = new WeakMap<object, { cert: PeerCertificate; reported: Set<string> }>();
  const checkRole = (req: IncomingMessage): void => {
    const refusal = refusals.get(req.socket);
    if (refusal !== undefined) throw refusal;
  };
  /** The request's instance, once its certificate's role and its naming of the instance are checked. */
  const instanceOf = (req: IncomingMessage): string => {
    checkRole(req);
    const instance = req.headers[HEADER_INSTANCE];
    if (typeof instance !== 'string' || !INSTANCE_ID.test(instance))
      throw new SandboxError('INVALID_ARGUMENTS', `${HEADER_INSTANCE} must be ${INSTANCE_ID_TEXT}`);
    const peer = peers.get(req.socket);
    const refusal = instanceRefusal(instance, peer?.cert);
    if (refusal === undefined) return instance;
    // A control plane retrying on a kept-alive connection logs once; a peer trying many instances
    // on one connection is reported for the first few (the set stays small).
    if (peer !== undefined && !peer.reported.has(instance) && peer.reported.size < REPORTED_MAX) {
      peer.reported.add(instance);
      const named = instancesOf(peer.cert);
      onForbidden(
        addressOf(req.socket),
        instance,
        `${describeCert(peer.cert)}, instances ${named.length === 0 ? 'none' : named.join(', ')}`,
      );
    }
    throw refusal;
  };
  const nodeOf = (req: IncomingMessage): Served => options.nodeFor(instanceOf(req));
  const server: Server = createServer({
    cert: options.cert,
    key: options.key,
    ca: options.ca,
    requestCert: true,
    rejectUnauthorized: true,
    keepAliveTimeout: KEEP_ALIVE_MS,
  });
  server.on('request', (req, res) => {
    void answer(req, res, instanceOf, options.nodeFor, { touch, state: () => poll?.state }).catch(onError);
  });
  // Every upgraded socket (channels, links, upgrades under way): closing the server ends them, so
  // the spliced pipes close with them and nothing holds close() open.
  const streams = new Set<Socket>();
  let closing = false;
  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    if (closing) {
      socket.destroy();
      return;
    }
    streams.add(socket);
    socket.once('close', () => streams.delete(socket));
    void upgrade(req, socket, head, nodeOf, channels, touch).catch((e: unknown) => {
      refuse(socket, e);
      onError(e);
    });
  });
  server.on('secureConnection', (socket: TLSSocket) => {
    const cert = socket.getPeerCertificate();
    const refusal = controlPlaneRefusal(cert);
    if (refusal === undefined) {
      peers.set(socket, { cert, reported: new Set() });
      return;
    }
    refusals.set(socket, refusal);
    onRefused(addressOf(socket), refusal.message);
  });
  // No certificate, another CA's, or one not made for a client: refused in the handshake.
  server.on('tlsClientError', (e: Error, socket: TLSSocket) =>
    onRefused(addressOf(socket), `in the TLS handshake: ${e.message.trim()}`),
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', onError);
  return {
    port: (server.address() as { port: number }).port,
    close: () =>
      new Promise<void>((resolve) => {
        closing = true;
        for (const { channel } of channels.values()) channel.close();
        channels.clear();
        for (const socket of streams) socket.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

// A socket reset during its handshake has forgotten its peer.
const addressOf = (socket: Socket): string =>
  socket.remoteAddress === undefined ? 'an unknown address' : `${socket.remoteAddress}:${socket.remotePort}`;

/** What a call does with idle polling: touches it (unless a round), and reads its state for `capacity`. */
interface CallPolling {
  touch: () => void;
  state: () => IdlePollState | undefined;
}

/** One call: its body read (bounded), the method run, the answer or the error written. */
async function answer(
  req: IncomingMessage,
  res: ServerResponse,
  instanceOf: (req: IncomingMessage) => string,
  nodeFor: (instance: string) => Served,
  polling: CallPolling,
): Promise<void> {
  let touch = nothing;
  try {
    const instance = instanceOf(req); // the certificate's role and instance, before the body is read
    const method = req.url?.startsWith(PREFIX) ? req.url.slice(PREFIX.length) : '';
    if (req.method !== 'POST' || !(METHODS as readonly string[]).includes(method))
      throw new SandboxError('NOT_FOUND', `No such node call: ${req.method} ${req.url}`);
    if (!ROUNDS.has(method)) touch = polling.touch;
    touch();
    const args = objectOf(JSON.parse((await bodyOf(req)) || '{}'), 'the body');
    const result = await call(nodeFor(instance), method as Method, args);
    const state = method === 'capacity' ? polling.state() : undefined;
    const body = state === undefined ? (result ?? {}) : { ...(result as object), idlePoll: state };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  } catch (e) {
    const { status, body } = errorBody(
      e instanceof SyntaxError ? new SandboxError('INVALID_ARGUMENTS', 'The body is not JSON.') : e,
    );
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }
  touch();
}

const bodyOf = async (req: IncomingMessage): Promise<string> => {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES)
      throw new SandboxError('INVALID_ARGUMENTS', `The body is over ${MAX_BODY_BYTES} bytes.`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
};

/** The node's answer to one call (the arguments checked first). */
async function call(node: Served, method: Method, a: Record<string, unknown>): Promise<unknown> {
  switch (method) {
    case 'info':
      return {
        protocol: PROTOCOL,
        name: node.name,
        defaults: node.defaults,
        maxima: node.maxima,
        ready: node.poolFor?.([]).ready ?? node.pool.ready,
        ...(node.claim === undefined ? {} : { features: [FEATURE_POOLED] }),
      };
    case 'pooled':
      // The size too: a control plane stops asking a node whose pool holds none (remote/warm.ts).
      return {
        ids: node.unclaimed?.() ?? [],
        ...(node.poolFor === undefined ? {} : { size: node.poolFor([]).size }),
      };
    case 'ensure': {
      // Checked again here: only known limits, positive integers, within this node's maxima.
      const limits = resolveLimits(node.defaults, node.maxima, objectOf(a.limits, 'limits'));
      const { warm: _warm, ...placed } = await node.ensure({
        agentId: agentIdOf(a.agentId),
        tenantId: agentIdOf(a.tenantId),
        limits,
        ...(a.runtime === undefined ? {} : { runtime: runtimeOf(a.runtime) }),
        ...(a.fromSnapshot === undefined ? {} : { fromSnapshot: snapshotIdOf(a.fromSnapshot) }),
        ...(a.pooled === undefined ? {} : { pooled: pooledOf(a.pooled) }),
      });
      return placed;
    }
    case 'snapshot':
      return snapshotsOf(node).snapshot(agentIdOf(a.agentId), snapshotIdOf(a.id));
    case 'dropSnapshot':
      return snapshotsOf(node).dropSnapshot(snapshotIdOf(a.id));
    case 'sweepSnapshots':
      return answerSweep(node, a);
    case 'find':
      return { sandbox: (await node.find(agentIdOf(a.agentId))) ?? null };
    case 'state':
      return { state: await node.state(agentIdOf(a.agentId)) };
    case 'stop':
      return node.stop(agentIdOf(a.agentId));
    case 'destroy':
      return node.destroy(agentIdOf(a.agentId));
    case 'pause':
      return { done: await node.pause(agentIdOf(a.agentId), pauseModeOf(a.mode)) };
    case 'usage':
      return { usage: (await node.usage(agentIdOf(a.agentId), usageOptionsOf(a.options))) ?? null };
    case 'adopt': {
      const knownAt = typeof a.knownAt === 'number' ? a.knownAt : 0;
      // The first step (client.ts adoptOver): what this node needs the store's word on.
      if (a.ask === true) {
        const asking = (node as Partial<AdoptAsking>).adoptQuestions;
        if (asking === undefined)
          throw new SandboxError('INVALID_ARGUMENTS', 'This node cannot say what its adopt needs to know.');
        return { questions: await asking.call(node, a.knownAt === undefined ? undefined : knownAt) };
      }
      const assigned = stringsOf(a.assigned, 'assigned');
      const pairs: Array<[string, string]> = [];
      for (let i = 0; i + 1 < assigned.length; i += 2)
        pairs.push([assigned[i] as string, assigned[i + 1] as string]);
      // Whether another replica's pool still runs cannot be asked across: its pools are kept.
      return {
        names: await node.adopt({
          claim: stringsOf(a.claim, 'claim'),
          assigned: new Map(pairs),
          ...(a.replicas === true ? { replicas: { alive: async () => true } } : {}),
          ...(a.known === undefined ? {} : { known: stringsOf(a.known, 'known'), knownAt }),
          ...(a.unknown === undefined ? {} : { unknown: stringsOf(a.unknown, 'unknown'), knownAt }),
        }),
      };
    }
    case 'capacity': {
      const claims = claimsOf(a); // checked before the engine is asked
      const c = await node.capacity();
      return node.poolFor === undefined ? c : { ...c, pool: node.poolFor(claims) };
    }
    case 'filled': {
      const claims = claimsOf(a);
      await node.pool.filled();
      return { ready: node.poolFor?.(claims).ready ?? node.pool.ready };
    }
  }
}

/**
 * The pooled claims the caller holds (`pooled`, as ensure takes them): its pool's ready count is
 * those nobody claimed and its own, never another control plane's claimed ones (a claim the node
 * did not hand out counts nothing).
 */
const claimsOf = (a: Record<string, unknown>): Array<{ id: string; claim: string }> =>
  a.pooled === undefined ? [] : pooledOf(a.pooled);

const usageOptionsOf = (value: unknown): { stats?: boolean; statsTimeoutMs?: number } => {
  if (value === undefined) return {};
  const o = objectOf(value, 'options');
  return {
    ...(o.stats === true ? { stats: true } : {}),
    ...(typeof o.statsTimeoutMs === 'number' && o.statsTimeoutMs > 0 && o.statsTimeoutMs <= 60_000
      ? { statsTimeoutMs: o.statsTimeoutMs }
      : {}),
  };
};

/** A refused upgrade: the error as an HTTP answer on the raw socket, then closed. */
function refuse(socket: Duplex, e: unknown): void {
  if (socket.destroyed) return;
  const { status, body } = errorBody(e);
  const text = JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${status} Refused\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
  );
}

const switching = (headers: Record<string, string>): string =>
  `HTTP/1.1 101 Switching Protocols\r\nupgrade: ${PROTOCOL}\r\nconnection: Upgrade\r\n${Object.entries(
    headers,
  )
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;

/** `open` and `link` (protocol.ts): the upgraded socket spliced to the channel or the link. */
async function upgrade(
  req: IncomingMessage,
  socket: Socket,
  head: Buffer,
  nodeOf: (req: IncomingMessage) => Served,
  channels: Channels,
  touch: () => void,
): Promise<void> {
  const node = nodeOf(req); // the certificate's role and instance first
  touch();
  if (req.headers.upgrade !== PROTOCOL)
    throw new SandboxError('INVALID_ARGUMENTS', `Upgrade must be ${PROTOCOL}.`);
  const url = new URL(req.url ?? '/', 'https://node');
  socket.on('error', () => {});
  const pooled = url.searchParams.get('pooled');
  if (url.pathname === `${PREFIX}open` && pooled !== null) {
    // One stream only: the pool hands a claimed channel to no other claim (pool.ts).
    const claimed = node.claim?.(pooledIdOf(pooled));
    if (claimed === undefined)
      throw new SandboxError('SANDBOX_UNAVAILABLE', 'No unclaimed pooled sandbox has that id.');
    opened(
      socket,
      head,
      channels,
      { channel: claimed.channel, owner: node, touch },
      { [HEADER_CLAIM]: claimed.claim },
    );
    return;
  }
  if (url.pathname === `${PREFIX}open`) {
    const channel = await node.open(agentIdOf(url.searchParams.get('agent') ?? undefined), {
      restart: url.searchParams.get('restart') === '1',
    });
    opened(socket, head, channels, { channel, owner: node, touch });
    return;
  }
  if (url.pathname === `${PREFIX}link`) {
    // Only the instance that opened a channel links to it (its id alone is no proof).
    const entry = channels.get(url.searchParams.get('channel') ?? '');
    const channel = entry?.owner === node ? entry.channel : undefined;
    if (!channel?.link)
      throw new SandboxError('SANDBOX_UNAVAILABLE', 'No open channel with a link has that id.');
    const offer = await channel.link();
    socket.write(switching({ [HEADER_LINK_TOKEN]: offer.token }));
    socket.once('close', () => offer.close());
    let pipe: SandboxdPipe;
    try {
      pipe = await offer.accepted;
    } catch {
      socket.destroy();
      return;
    }
    if (socket.destroyed) {
      pipe.close();
      return;
    }
    socket.write(Buffer.of(ACCEPTED));
    splice(socket, head, pipe, touch);
    return;
  }
  throw new SandboxError('NOT_FOUND', `No such node stream: ${url.pathname}`);
}

/** An opened channel: known by a fresh id while it is open, answered, spliced to the socket. */
function opened(
  socket: Socket,
  head: Buffer,
  channels: Channels,
  { channel, owner, touch }: { channel: SandboxdChannel; owner: Served; touch: () => void },
  headers: Record<string, string> = {},
): void {
  if (socket.destroyed) {
    channel.close(); // the control plane went, or the server closed, while it opened
    return;
  }
  const id = randomBytes(16).toString('hex');
  channels.set(id, { channel, owner });
  void channel.closed.then(() => channels.delete(id));
  socket.write(switching({ [HEADER_CHANNEL]: id, [HEADER_LINK]: channel.link ? '1' : '0', ...headers }));
  splice(socket, head, channel, touch);
}

/**
 * Bytes both ways until either side goes; the socket's end detaches, it never ends sandboxd's
 * input. Each chunk either way touches idle polling: a call, its answer, output (a clock read a
 * chunk while polling).
 */
function splice(socket: Socket, head: Buffer, pipe: SandboxdPipe, touch: () => void): void {
  if (head.length > 0) pipe.output.write(head);
  socket.pipe(pipe.output, { end: false });
  pipe.input.pipe(socket);
  if (touch !== nothing) {
    socket.on('data', touch);
    pipe.input.on('data', touch);
  }
  socket.setNoDelay(true);
  socket.once('close', () => pipe.close());
  void pipe.closed.then(() => socket.destroy());
}
