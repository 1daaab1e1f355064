// The certificates TLS interception mints (host/egress/intercept/x509.ts), read back by Node's own
// X.509 parser and used in a real TLS handshake: a CA that signs, leaves for a name and for IPv4 and
// IPv6 literals that verify against it, with the host in their subjectAltName; a tenant's CA made
// once and kept sealed.
import { X509Certificate } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { connect, createServer } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { createAuthorities } from '../../../host/egress/intercept/authority.ts';
import { ipBytes, issuerOf, mintCa, mintLeaf } from '../../../host/egress/intercept/x509.ts';
import { openStore } from '../../../host/store/index.ts';

describe('interception certificates', () => {
  const ca = mintCa('dsh egress CA test');
  const issuer = issuerOf(ca);

  it('makes a CA that Node reads as one, and leaves it signed', () => {
    const caCert = new X509Certificate(ca.certPem);
    expect(caCert.ca).toBe(true);
    expect(caCert.subject).toContain('CN=dsh egress CA test');
    expect(caCert.verify(caCert.publicKey)).toBe(true);
    for (const [host, san] of [
      ['api.example.com', 'DNS:api.example.com'],
      ['127.0.0.4', 'IP Address:127.0.0.4'],
      ['2001:db8::1', 'IP Address:2001:DB8:0:0:0:0:0:1'],
    ] as const) {
      const leaf = new X509Certificate(mintLeaf(ca, issuer, host, 7).certPem);
      expect(leaf.ca).toBe(false);
      expect(leaf.verify(caCert.publicKey)).toBe(true);
      expect(leaf.checkIssued(caCert)).toBe(true);
      expect(leaf.subjectAltName).toBe(san);
      if (san.startsWith('DNS')) expect(leaf.checkHost(host)).toBe(host);
      else expect(leaf.checkIP(host)).toBe(host);
    }
  });

  it('serves TLS that a client trusting only the CA accepts for that host', async () => {
    const leaf = mintLeaf(ca, issuer, '127.0.0.1', 1);
    const server = createServer({ key: leaf.keyPem, cert: leaf.certPem }, (s) => s.end('over tls'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const port = (server.address() as AddressInfo).port;
    try {
      const text = await new Promise<string>((resolve, reject) => {
        const socket = connect({ host: '127.0.0.1', port, ca: ca.certPem }, () => {
          let got = '';
          socket.on('data', (b: Buffer) => {
            got += b.toString();
          });
          socket.on('end', () => resolve(got));
        });
        socket.on('error', reject);
      });
      expect(text).toBe('over tls');
    } finally {
      server.close();
    }
  });

  it('writes IP addresses as SAN bytes', () => {
    expect([...ipBytes('10.1.2.3')]).toEqual([10, 1, 2, 3]);
    expect(ipBytes('::1').toString('hex')).toBe('00000000000000000000000000000001');
    expect(ipBytes('fe80::1:2').toString('hex')).toBe('fe800000000000000000000000010002');
  });
});

describe("a tenant's interception CA", () => {
  it('is made once per tenant, kept sealed in the store, and signs the leaves of every process', async () => {
    const store = openStore({ path: ':memory:' });
    try {
      await store.tenants.createTenant('a');
      const [tenant] = await store.tenants.listTenants();
      const id = (tenant as { id: string }).id;
      const first = createAuthorities({ store: store.egress });
      const pem = await first.caOf(id);
      expect(await first.caOf(id)).toBe(pem);
      // Another process over the same store: the same CA.
      expect(await createAuthorities({ store: store.egress }).caOf(id)).toBe(pem);
      const row = store.db.prepare('SELECT ca FROM tenant_egress_ca').all()[0] as { ca: string };
      expect(row.ca.startsWith('sealed:v1:')).toBe(true);
      expect(row.ca).not.toContain('PRIVATE KEY');
      const context = await first.contextFor(id, 'api.example.com');
      expect(await first.contextFor(id, 'api.example.com')).toBe(context);
    } finally {
      store.close();
    }
  });
});
