// The gateway's reading of destinations: every spelling of an internal address is refused, every
// spelling of one host compares as one, and patterns admit what they say and nothing more.
import { describe, expect, it } from 'vitest';
import { classifyAddress, parseIPv6 } from '../../../host/egress/address.ts';
import { canonicalHost, canonicalPattern, hostMatches } from '../../../host/egress/hosts.ts';
import { canonicalRules, decide } from '../../../host/egress/rules.ts';

const special = (ip: string) => classifyAddress(ip).kind === 'special';

describe('classifyAddress', () => {
  it.each([
    '127.0.0.1',
    '127.255.1.2',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '100.64.0.1',
    '169.254.169.254',
    '169.254.1.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '198.18.0.1',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd00:ec2::254',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:169.254.169.254',
    '::127.0.0.1',
    '64:ff9b::a00:1',
    '2002:7f00:1::',
    '2001:db8::1',
    'fe80::1%eth0',
    'not-an-ip',
  ])('refuses %s', (ip) => expect(special(ip)).toBe(true));

  it.each(['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700::1111', '::ffff:93.184.216.34'])(
    'admits the public address %s',
    (ip) => expect(classifyAddress(ip)).toEqual({ kind: 'public' }),
  );

  it('names the range, and the IPv4 address an IPv6 form carries', () => {
    expect(classifyAddress('169.254.169.254')).toEqual({ kind: 'special', range: 'cloud metadata' });
    expect(classifyAddress('fd00:ec2::254')).toEqual({ kind: 'special', range: 'cloud metadata' });
    expect(classifyAddress('::ffff:10.0.0.1')).toEqual({
      kind: 'special',
      range: 'private (10.0.0.1 inside IPv6)',
    });
  });

  it('reads every IPv6 text form', () => {
    expect(parseIPv6('::1')).toBe(1n);
    expect(parseIPv6('0:0:0:0:0:ffff:127.0.0.1')).toBe(parseIPv6('::ffff:7f00:1'));
    expect(parseIPv6('1:2:3:4:5:6:7:8')).toBe(0x00010002000300040005000600070008n);
    expect(parseIPv6('1::')).toBe(1n << 112n);
  });
});

describe('canonicalHost', () => {
  it.each([
    ['127.1', '127.0.0.1'],
    ['0x7f000001', '127.0.0.1'],
    ['2130706433', '127.0.0.1'],
    ['0177.0.0.1', '127.0.0.1'],
    ['[::ffff:127.0.0.1]', '::ffff:7f00:1'],
    ['::1', '::1'],
    ['localhost.', 'localhost'],
    ['ExAmple.COM', 'example.com'],
    ['bücher.example', 'xn--bcher-kva.example'],
  ])('reads %s as %s', (raw, host) => expect(canonicalHost(raw).host).toBe(host));

  it.each(['allowed@evil', 'evil.com:80', 'a/b', 'a b', '', 'a?b', 'x#y', 'fe80::1%25eth0'])(
    'refuses %j',
    (raw) => expect(() => canonicalHost(raw)).toThrow(expect.objectContaining({ code: 'EGRESS_DENIED' })),
  );
});

describe('patterns and rules', () => {
  it('a wildcard admits names below it, not itself or look-alikes', () => {
    const p = canonicalPattern('*.Example.com');
    expect(p).toBe('*.example.com');
    expect(hostMatches(p, 'a.example.com')).toBe(true);
    expect(hostMatches(p, 'a.b.example.com')).toBe(true);
    expect(hostMatches(p, 'example.com')).toBe(false);
    expect(hostMatches(p, 'evilexample.com')).toBe(false);
    expect(hostMatches('example.com', 'a.example.com')).toBe(false);
  });

  it('refuses patterns that are not one of the documented forms', () => {
    for (const bad of ['*.1.2.3.4', 'a.*.com', 'user@host', 'host:443', '**.x'])
      expect(() => canonicalPattern(bad)).toThrow(expect.objectContaining({ code: 'BAD_REQUEST' }));
  });

  it('ports default to 80 and 443; methods when named; a rule with methods admits no opaque tunnel', () => {
    const tenant = canonicalRules([{ host: 'a.com' }, { host: 'b.com', ports: [8443], methods: ['get'] }]);
    expect(decide(tenant, undefined, { host: 'a.com', port: 443 }).kind).toBe('allow');
    expect(decide(tenant, undefined, { host: 'a.com', port: 22 }).kind).toBe('deny');
    expect(decide(tenant, undefined, { host: 'b.com', port: 8443, method: 'GET' }).kind).toBe('allow');
    expect(decide(tenant, undefined, { host: 'b.com', port: 8443, method: 'POST' }).kind).toBe('deny');
    expect(decide(tenant, undefined, { host: 'b.com', port: 8443 }).kind).toBe('deny');
  });

  it("an agent's rules only narrow the tenant's, never widen them", () => {
    const tenant = canonicalRules([{ host: '*.example.com' }]);
    const agent = canonicalRules([{ host: 'docs.example.com' }, { host: 'evil.com' }]);
    expect(decide(tenant, agent, { host: 'docs.example.com', port: 443 }).kind).toBe('allow');
    expect(decide(tenant, agent, { host: 'api.example.com', port: 443 })).toEqual({
      kind: 'deny',
      reason: "api.example.com:443 is not in the agent's egress allowlist",
    });
    expect(decide(tenant, agent, { host: 'evil.com', port: 443 })).toEqual({
      kind: 'deny',
      reason: "evil.com:443 is not in the tenant's egress allowlist",
    });
    expect(decide(tenant, [], { host: 'docs.example.com', port: 443 }).kind).toBe('deny');
  });
});
