// X.509 certificates for TLS interception: a tenant's CA (made once, kept by ./authority.ts) and
// short-lived leaves for the hosts it intercepts, on ECDSA P-256 keys. Node's crypto makes the keys,
// their SubjectPublicKeyInfo and the signatures; it has no certificate builder, so this module
// writes the few DER structures a certificate needs (RFC 5280) rather than adding a dependency for
// them: only our own values go in (a host the gateway canonicalized, our serials and times).
// Tested by Node's own parser (X509Certificate, verify) and by real TLS clients (curl, Node).
import {
  createHash,
  createPrivateKey,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
  sign,
  X509Certificate,
} from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';

export interface CertifiedKey {
  certPem: string;
  keyPem: string;
}

const tlv = (tag: number, ...parts: Buffer[]): Buffer => {
  const body = Buffer.concat(parts);
  const n = body.length;
  const length =
    n < 0x80
      ? Buffer.from([n])
      : n < 0x100
        ? Buffer.from([0x81, n])
        : n < 0x10000
          ? Buffer.from([0x82, n >> 8, n & 0xff])
          : Buffer.from([0x83, n >> 16, (n >> 8) & 0xff, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), length, body]);
};
const seq = (...parts: Buffer[]) => tlv(0x30, ...parts);
const set = (...parts: Buffer[]) => tlv(0x31, ...parts);
const octets = (b: Buffer) => tlv(0x04, b);
const bits = (b: Buffer, unused = 0) => tlv(0x03, Buffer.from([unused]), b);
const TRUE = tlv(0x01, Buffer.from([0xff]));

/** A non-negative INTEGER from big-endian bytes. */
const integer = (b: Buffer): Buffer => {
  let i = 0;
  while (i < b.length - 1 && b[i] === 0) i++;
  const v = b.subarray(i);
  return tlv(0x02, (v[0] as number) & 0x80 ? Buffer.concat([Buffer.from([0]), v]) : v);
};

const oid = (dotted: string): Buffer => {
  const [a, b, ...rest] = dotted.split('.').map(Number) as [number, number, ...number[]];
  const out = [40 * a + b];
  for (const n of rest) {
    const groups = [n & 0x7f];
    for (let v = n >>> 7; v > 0; v >>>= 7) groups.unshift((v & 0x7f) | 0x80);
    out.push(...groups);
  }
  return tlv(0x06, Buffer.from(out));
};

/** UTCTime until 2049, GeneralizedTime after (RFC 5280 4.1.2.5). */
const time = (d: Date): Buffer => {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return d.getUTCFullYear() < 2050
    ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`))
    : tlv(0x18, Buffer.from(`${iso}Z`));
};

const name = (commonName: string, organization: string): Buffer =>
  seq(
    set(seq(oid('2.5.4.10'), tlv(0x0c, Buffer.from(organization)))),
    set(seq(oid('2.5.4.3'), tlv(0x0c, Buffer.from(commonName)))),
  );

const extension = (id: string, critical: boolean, value: Buffer): Buffer =>
  seq(oid(id), ...(critical ? [TRUE] : []), octets(value));

const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));

/** An IP literal's bytes for a SAN iPAddress: 4 or 16. */
export const ipBytes = (ip: string): Buffer => {
  if (isIPv4(ip)) return Buffer.from(ip.split('.').map(Number));
  if (!isIPv6(ip)) throw new Error(`${ip} is not an IP address`);
  const [head = '', tail = ''] = ip.split('::');
  if (ip.includes('.')) throw new Error(`${ip}: IPv4 inside IPv6 is not certified`);
  const part = (s: string): number[] => (s === '' ? [] : s.split(':').map((g) => Number.parseInt(g, 16)));
  const h = part(head);
  const t = ip.includes('::') ? part(tail) : [];
  const groups = [...h, ...new Array(8 - h.length - t.length).fill(0), ...t];
  const out = Buffer.alloc(16);
  for (const [i, g] of groups.entries()) out.writeUInt16BE(g, i * 2);
  return out;
};

const keyId = (spki: Buffer): Buffer => createHash('sha1').update(spki).digest();

interface Issuer {
  name: Buffer;
  key: KeyObject;
  keyId: Buffer;
}

function certificate(options: {
  subject: Buffer;
  spki: Buffer;
  issuer: Issuer;
  notBefore: Date;
  notAfter: Date;
  extensions: Buffer[];
}): string {
  const serial = randomBytes(16);
  serial[0] = ((serial[0] as number) & 0x7f) | 0x01; // positive, 16 bytes
  const tbs = seq(
    tlv(0xa0, tlv(0x02, Buffer.from([2]))), // v3
    integer(serial),
    ECDSA_SHA256,
    options.issuer.name,
    seq(time(options.notBefore), time(options.notAfter)),
    options.subject,
    options.spki,
    tlv(0xa3, seq(...options.extensions)),
  );
  const signature = sign('sha256', tbs, options.issuer.key);
  const der = seq(tbs, ECDSA_SHA256, bits(signature));
  const b64 = der.toString('base64').replace(/.{64}/g, '$&\n');
  return `-----BEGIN CERTIFICATE-----\n${b64.replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`;
}

const keyPair = () => generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const spkiOf = (key: KeyObject): Buffer => key.export({ type: 'spki', format: 'der' });
const pem = (key: KeyObject): string => key.export({ type: 'pkcs8', format: 'pem' }) as string;

/** A CA certificate and key (ten years; it signs leaves only). */
export function mintCa(commonName: string, now = new Date()): CertifiedKey {
  const { publicKey, privateKey } = keyPair();
  const spki = spkiOf(publicKey);
  const subject = name(commonName, 'dsh-sandbox egress');
  const certPem = certificate({
    subject,
    spki,
    issuer: { name: subject, key: privateKey, keyId: keyId(spki) },
    notBefore: new Date(now.getTime() - 3600_000),
    notAfter: new Date(now.getTime() + 10 * 365 * 86400_000),
    extensions: [
      extension('2.5.29.19', true, seq(TRUE, tlv(0x02, Buffer.from([0])))), // CA, no intermediates
      extension('2.5.29.15', true, bits(Buffer.from([0x06]), 1)), // keyCertSign, cRLSign
      extension('2.5.29.14', false, octets(keyId(spki))),
    ],
  });
  return { certPem, keyPem: pem(privateKey) };
}

/** A leaf for `host` (a name or an IP literal) signed by `ca`, valid `days` days. */
export function mintLeaf(
  ca: CertifiedKey,
  caCert: { subject: Buffer; keyId: Buffer },
  host: string,
  days: number,
  now = new Date(),
): CertifiedKey {
  const { publicKey, privateKey } = keyPair();
  const spki = spkiOf(publicKey);
  const ip = isIPv4(host) || isIPv6(host);
  const san = ip ? tlv(0x87, ipBytes(host)) : tlv(0x82, Buffer.from(host, 'ascii'));
  const certPem = certificate({
    subject: name(host, 'dsh-sandbox egress interception'),
    spki,
    issuer: { name: caCert.subject, key: createPrivateKey(ca.keyPem), keyId: caCert.keyId },
    notBefore: new Date(now.getTime() - 3600_000),
    notAfter: new Date(now.getTime() + days * 86400_000),
    extensions: [
      extension('2.5.29.19', true, seq()),
      extension('2.5.29.15', true, bits(Buffer.from([0x80]), 7)), // digitalSignature
      extension('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'))), // serverAuth
      extension('2.5.29.17', true, seq(san)),
      extension('2.5.29.14', false, octets(keyId(spki))),
      extension('2.5.29.35', false, seq(tlv(0x80, caCert.keyId))),
    ],
  });
  return { certPem, keyPem: pem(privateKey) };
}

/** What signing leaves needs of a CA certificate: its subject (DER) and key identifier. */
export function issuerOf(ca: CertifiedKey): { subject: Buffer; keyId: Buffer } {
  const cert = new X509Certificate(ca.certPem);
  return { subject: subjectDer(cert.raw), keyId: keyId(spkiOf(cert.publicKey)) };
}

/** The subject Name of a DER certificate: the sixth element of its TBSCertificate. */
function subjectDer(der: Buffer): Buffer {
  const read = (b: Buffer, at: number): { start: number; end: number; body: number } => {
    let n = b[at + 1] as number;
    let body = at + 2;
    if (n & 0x80) {
      const k = n & 0x7f;
      n = 0;
      for (let i = 0; i < k; i++) n = (n << 8) | (b[at + 2 + i] as number);
      body += k;
    }
    return { start: at, end: body + n, body };
  };
  const cert = read(der, 0);
  const tbs = read(der, cert.body);
  let at = tbs.body;
  for (let i = 0; i < 5; i++) at = read(der, at).end; // version, serial, signature, issuer, validity
  const subject = read(der, at);
  return der.subarray(subject.start, subject.end);
}
