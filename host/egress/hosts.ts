// Host names as the gateway compares them. A destination (a URL's host, a proxy's CONNECT target)
// is read once by the WHATWG URL parser, so every spelling of one host compares as one: case, IDNA
// (punycode), IPv4 in any form the parser accepts (`127.1`, `0x7f000001`, `2130706433` all become
// 127.0.0.1), IPv6 compressed, and a trailing dot dropped (`localhost.` is `localhost`). A target that
// smuggles anything else (userinfo, a path, a second host) is refused, never read loosely.
// Patterns: `example.com` is that host only; `*.example.com` any name below it (not itself); `*`
// any host; an IP literal that address only.
import { isIP } from 'node:net';
import { SandboxError } from '../errors.ts';

export interface CanonicalHost {
  /** Lower-case ASCII, no trailing dot, IPv6 without brackets. */
  host: string;
  /** 4 or 6 for an IP literal, 0 for a name. */
  ip: 0 | 4 | 6;
}

const denied = (message: string, reason: string): SandboxError =>
  new SandboxError('EGRESS_DENIED', message, { data: { reason } });

/** The canonical form of a host; EGRESS_DENIED when it is not exactly one host. */
export function canonicalHost(raw: string): CanonicalHost {
  const text = raw.trim();
  if (text === '' || text.length > 253 + 2 || /[\s@/\\?#%]/.test(text.replace(/^\[[^\]]*\]$/, '[]')))
    throw denied(`${JSON.stringify(raw.slice(0, 100))} is not a host name.`, 'malformed host');
  // A port or a second host after a colon is not part of a host; only an IPv6 literal has colons.
  if (text.includes(':') && isIP(text) !== 6 && !/^\[[^\]]*\]$/.test(text))
    throw denied(`${JSON.stringify(raw.slice(0, 100))} is not a host name.`, 'malformed host');
  const bracketed = isIP(text) === 6 ? `[${text}]` : text;
  let hostname: string;
  try {
    hostname = new URL(`http://${bracketed}/`).hostname;
  } catch {
    throw denied(`${JSON.stringify(raw.slice(0, 100))} is not a host name.`, 'malformed host');
  }
  const host = hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.+$/, '');
  if (host === '') throw denied(`${JSON.stringify(raw.slice(0, 100))} is not a host name.`, 'malformed host');
  const family = isIP(host);
  return { host, ip: family === 4 ? 4 : family === 6 ? 6 : 0 };
}

/** A pattern as stored: canonical, `*.` kept; CONFIG-time check, so BAD_REQUEST when invalid. */
export function canonicalPattern(pattern: string): string {
  if (pattern === '*') return '*';
  const wildcard = pattern.startsWith('*.');
  try {
    const { host, ip } = canonicalHost(wildcard ? pattern.slice(2) : pattern);
    if (wildcard && ip !== 0) throw new Error('a wildcard over an IP address');
    if (host.includes('*')) throw new Error('"*" only as the whole first label');
    return wildcard ? `*.${host}` : host;
  } catch (error) {
    throw new SandboxError(
      'BAD_REQUEST',
      `Host pattern ${JSON.stringify(pattern.slice(0, 100))} is invalid: use example.com, *.example.com, an IP address or *.`,
      { cause: error },
    );
  }
}

/** Whether the canonical `host` matches the canonical `pattern`. */
export function hostMatches(pattern: string, host: string): boolean {
  if (pattern === '*') return true;
  if (pattern.startsWith('*.')) return host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1;
  return pattern === host;
}
