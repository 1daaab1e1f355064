// Where a request comes from, for limits that count per client (the key-failure throttle): the
// TCP peer's address, or, when that peer is a proxy the configuration trusts, the client that proxy
// names in X-Forwarded-For. The header is never believed otherwise: any client can send one.
// IPv6 clients count by their /64 (one subscriber's prefix: a host holds a whole /64 and could
// otherwise take a new address per attempt); IPv4-mapped IPv6 addresses count as the IPv4 address.
// The address is read from the node request (env.incoming), not from the Hono request: the
// console's in-process calls carry the browser's connection along (console/api.ts) but not its
// headers. A request that came over no connection (app.request in tests) has no source.
// A request another replica forwarded (its signature checked by ./forward/verify.ts) comes from
// the client that replica names: the peer is only the replica.
import type { IncomingMessage } from 'node:http';
import { type BlockList, isIP } from 'node:net';

const MAPPED = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i;

/** An address as the throttle counts it: IPv4 as is, IPv6 as its /64; undefined if not an IP. */
export const sourceKey = (raw: string): string | undefined => {
  const address = raw
    .trim()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/%.*$/, '');
  const mapped = MAPPED.exec(address)?.[1];
  if (mapped !== undefined) return isIP(mapped) === 4 ? mapped : undefined;
  const family = isIP(address);
  if (family === 4) return address;
  if (family !== 6) return undefined;
  return `${expandIpv6(address).slice(0, 4).join(':')}::/64`;
};

/** The eight hextets of a valid IPv6 address (an embedded IPv4 tail becomes two). */
const expandIpv6 = (address: string): string[] => {
  let text = address.toLowerCase();
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4 !== null) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = tail === undefined ? [] : Array.from({ length: 8 - left.length - right.length }, () => '0');
  return [...left, ...zeros, ...right].map((part) => Number.parseInt(part, 16).toString(16));
};

/** Clients named by the replica that forwarded a request, once its signature was checked. */
const forwardedClients = new WeakMap<IncomingMessage, string>();

/** Counts the request of `env` as coming from `client` (a verified forwarding replica's word). */
export const nameForwardedClient = (env: unknown, client: string): void => {
  const incoming = (env as { incoming?: IncomingMessage } | undefined)?.incoming;
  if (incoming !== undefined && client !== '') forwardedClients.set(incoming, client);
};

const familyOf = (address: string): 'ipv4' | 'ipv6' => (isIP(address) === 4 ? 'ipv4' : 'ipv6');

/**
 * The client of a request that came through a node server, counted as sourceKey says; undefined for
 * an in-process request. With a trusted peer, the X-Forwarded-For entries are walked from the
 * right (each proxy appends the address it saw) past the trusted ones; the first other entry is the
 * client. A malformed entry ends the walk at the last trusted hop, so a forged header never helps.
 */
export const clientSource = (env: unknown, proxies: BlockList | undefined): string | undefined => {
  const incoming = (env as { incoming?: IncomingMessage } | undefined)?.incoming;
  const named = incoming === undefined ? undefined : forwardedClients.get(incoming);
  if (named !== undefined) return named;
  const peer = incoming?.socket?.remoteAddress;
  if (peer === undefined) return undefined;
  let client = peer.replace(MAPPED, '$1');
  if (proxies?.check(client, familyOf(client))) {
    const header = incoming?.headers['x-forwarded-for'];
    const hops = (Array.isArray(header) ? header.join(',') : (header ?? ''))
      .split(',')
      .map((hop) => hop.trim())
      .filter((hop) => hop !== '');
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = (hops[i] as string).replace(MAPPED, '$1');
      if (isIP(hop) === 0) break;
      client = hop;
      if (!proxies.check(hop, familyOf(hop))) break;
    }
  }
  return sourceKey(client) ?? client;
};
