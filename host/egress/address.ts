// Which IP addresses the egress gateway may connect to. Everything that is not a globally routable
// unicast address is refused: loopback, private (RFC 1918), CGNAT, link-local (the cloud metadata
// services at 169.254.169.254 and fd00:ec2::254 among them), unique-local, multicast, broadcast,
// unspecified, documentation and benchmarking ranges, and the IPv6 forms that carry an IPv4 address
// (IPv4-mapped and -compatible, NAT64, 6to4, Teredo), which are judged by the address they carry.
// Input is an address as a resolver returns it (canonical dotted quad or IPv6 text); names and
// non-canonical IPv4 forms (`127.1`, `0x7f000001`) are the URL parser's and resolver's business
// before this runs, and anything this parser does not read is refused, never guessed at.
import { isIPv4, isIPv6 } from 'node:net';

/** `public`: a routable unicast address; `special`: refused, with the range it falls in. */
export type AddressClass = { kind: 'public' } | { kind: 'special'; range: string };

type Range = readonly [prefix: bigint, bits: number, name: string];

const v4 = (a: number, b: number, c: number, d: number): bigint =>
  (BigInt(a) << 24n) | (BigInt(b) << 16n) | (BigInt(c) << 8n) | BigInt(d);

/** IPv4 ranges that are not public unicast (RFC 6890 and its successors). */
const V4_RANGES: readonly Range[] = [
  [v4(0, 0, 0, 0), 8, 'this network'],
  [v4(10, 0, 0, 0), 8, 'private'],
  [v4(100, 64, 0, 0), 10, 'carrier-grade NAT'],
  [v4(127, 0, 0, 0), 8, 'loopback'],
  [v4(169, 254, 169, 254), 32, 'cloud metadata'],
  [v4(169, 254, 0, 0), 16, 'link-local'],
  [v4(172, 16, 0, 0), 12, 'private'],
  [v4(192, 0, 0, 0), 24, 'IETF protocol assignments'],
  [v4(192, 0, 2, 0), 24, 'documentation'],
  [v4(192, 88, 99, 0), 24, '6to4 relay anycast'],
  [v4(192, 168, 0, 0), 16, 'private'],
  [v4(198, 18, 0, 0), 15, 'benchmarking'],
  [v4(198, 51, 100, 0), 24, 'documentation'],
  [v4(203, 0, 113, 0), 24, 'documentation'],
  [v4(224, 0, 0, 0), 4, 'multicast'],
  [v4(240, 0, 0, 0), 4, 'reserved'],
];

const v6 = (text: string): bigint => parseIPv6(text) ?? 0n;

/** IPv6 ranges that are not public unicast; the v4-carrying ones are handled before these. */
const V6_RANGES: readonly Range[] = [
  [v6('::'), 128, 'unspecified'],
  [v6('::1'), 128, 'loopback'],
  [v6('100::'), 64, 'discard'],
  [v6('2001::'), 23, 'IETF protocol assignments'],
  [v6('2001:db8::'), 32, 'documentation'],
  [v6('3fff::'), 20, 'documentation'],
  [v6('fd00:ec2::254'), 128, 'cloud metadata'],
  [v6('fc00::'), 7, 'unique-local'],
  [v6('fe80::'), 10, 'link-local'],
  [v6('fec0::'), 10, 'site-local'],
  [v6('ff00::'), 8, 'multicast'],
];

const inRange = (value: bigint, width: number, [prefix, bits]: Range): boolean =>
  value >> BigInt(width - bits) === prefix >> BigInt(width - bits);

function parseIPv4(text: string): bigint | undefined {
  if (!isIPv4(text)) return undefined;
  const [a = 0, b = 0, c = 0, d = 0] = text.split('.').map(Number);
  return v4(a, b, c, d);
}

/** The 128-bit value of an IPv6 address in any RFC 4291 text form; undefined when it is not one. */
export function parseIPv6(text: string): bigint | undefined {
  if (!isIPv6(text) || text.includes('%')) return undefined;
  let body = text;
  const lastColon = body.lastIndexOf(':');
  const dotted = body.slice(lastColon + 1);
  if (dotted.includes('.')) {
    // a.b.c.d as the last 32 bits: rewritten as two hex groups.
    const value = parseIPv4(dotted);
    if (value === undefined) return undefined;
    body = `${body.slice(0, lastColon + 1)}${(value >> 16n).toString(16)}:${(value & 0xffffn).toString(16)}`;
  }
  const halves = body.split('::');
  let groups: string[];
  const split = (s: string): string[] => (s === '' ? [] : s.split(':'));
  if (halves.length === 2) {
    const head = split(halves[0] ?? '');
    const rest = split(halves[1] ?? '');
    groups = [...head, ...Array<string>(Math.max(0, 8 - head.length - rest.length)).fill('0'), ...rest];
  } else groups = split(body);
  const words = groups.map((g) => BigInt(`0x${g}`));
  if (words.length !== 8) return undefined;
  return words.reduce((acc, w) => (acc << 16n) | w, 0n);
}

const v4Text = (value: bigint): string =>
  [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn)).join('.');

/** The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4, Teredo), if any. */
function embeddedV4(value: bigint): bigint | undefined {
  const low32 = value & 0xffffffffn;
  if (value >> 32n === 0xffffn) return low32; // ::ffff:a.b.c.d (IPv4-mapped)
  if (value >> 32n === 0n && value > 1n) return low32; // ::a.b.c.d (IPv4-compatible, deprecated)
  if (value >> 32n === 0x0064ff9b0000000000000000n) return low32; // 64:ff9b::/96 (NAT64)
  if (value >> 80n === 0x0064ff9b0001n) return low32; // 64:ff9b:1::/48 (local NAT64)
  if (value >> 112n === 0x2002n) return (value >> 80n) & 0xffffffffn; // 2002::/16 (6to4)
  if (value >> 96n === 0x20010000n) return ~value & 0xffffffffn; // 2001::/32 (Teredo client)
  return undefined;
}

function classifyV4(value: bigint): AddressClass {
  if (value === 0xffffffffn) return { kind: 'special', range: 'broadcast' };
  const range = V4_RANGES.find((r) => inRange(value, 32, r));
  return range === undefined ? { kind: 'public' } : { kind: 'special', range: range[2] };
}

/** Whether `address` (an IP literal) may be connected to; anything unreadable is special. */
export function classifyAddress(address: string): AddressClass {
  const four = parseIPv4(address);
  if (four !== undefined) return classifyV4(four);
  const six = parseIPv6(address);
  if (six === undefined) return { kind: 'special', range: 'not an IP address' };
  const carried = embeddedV4(six);
  if (carried !== undefined) {
    const inner = classifyV4(carried);
    return inner.kind === 'public'
      ? inner
      : { kind: 'special', range: `${inner.range} (${v4Text(carried)} inside IPv6)` };
  }
  const range = V6_RANGES.find((r) => inRange(six, 128, r));
  if (range !== undefined) return { kind: 'special', range: range[2] };
  // Only global unicast (2000::/3) is routable; the rest of the space is unassigned.
  return six >> 125n === 1n ? { kind: 'public' } : { kind: 'special', range: 'unassigned' };
}
