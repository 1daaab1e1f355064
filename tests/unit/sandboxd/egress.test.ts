// sandboxd's end of sandbox egress (sandbox-image/sandboxd/egress.ts) against a local sandboxd: its
// proxy address reaches every command's environment; before the host ever takes a connection one
// is answered 503 at once (never a hang); a taken connection is said at once (an empty piece,
// before its client sent anything) and carries bytes both ways and both ends over an egressAccept
// stream; a cancelled accept lets the next one take the connection; the tenant's CA joins the
// bundle that SSL_CERT_FILE and friends name, and nothing but one PEM certificate is accepted for it;
// a FIFO or symlink the agent planted at the bundle's old temporary name (its state directory is the
// agent's to write) neither blocks sandboxd nor takes the write elsewhere.
import { execFileSync } from 'node:child_process';
import {
  closeSync,
  constants,
  lstatSync,
  openSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mintCa } from '../../../host/egress/intercept/x509.ts';
import { useLocalSandboxd } from './harness.ts';

const local = useLocalSandboxd();

const proxyPort = async (): Promise<number> => {
  const { stdout } = await local.c.exec('printf %s "$HTTP_PROXY"');
  const m = /^http:\/\/127\.0\.0\.1:(\d+)$/.exec(stdout);
  if (!m) throw new Error(`no proxy in the environment: ${stdout}`);
  return Number(m[1]);
};

/** A client of the proxy: what it receives until the end, and the socket to write to. */
const client = async (port: number): Promise<{ socket: Socket; received: Promise<string> }> => {
  const socket = connect(port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  const received = new Promise<string>((resolve) => {
    let text = '';
    socket.on('data', (b: Buffer) => {
      text += b.toString();
    });
    socket.on('end', () => resolve(text));
    socket.on('close', () => resolve(text));
  });
  return { socket, received };
};

describe('sandboxd egress proxy', () => {
  it('answers 503 at once while no control plane serves it', async () => {
    const { received } = await client(await proxyPort());
    const text = await received;
    expect(text).toMatch(/^HTTP\/1\.1 503/);
    expect(text).toContain('X-Dsh-Egress: unavailable');
  });

  it('carries a connection both ways over an egressAccept stream, ends included', async () => {
    const egress = local.c.egress;
    if (!egress) throw new Error('sandboxd offers no egress');
    const { io, result } = egress.accept();
    const { socket, received } = await client(await proxyPort());
    const pieces = io.incoming[Symbol.asyncIterator]();
    // The arrival is said at once, before the client sent a byte: an empty piece.
    const arrived = await pieces.next();
    expect(arrived).toEqual({ done: false, value: Buffer.alloc(0) });
    socket.write('CONNECT a.test:443 HTTP/1.1\r\n\r\n');
    const first = await pieces.next();
    expect(first.value?.toString()).toBe('CONNECT a.test:443 HTTP/1.1\r\n\r\n');
    await io.write(Buffer.from('HTTP/1.1 200 OK\r\n\r\nfrom the host'));
    await io.end();
    socket.end('bye');
    const rest: string[] = [];
    for (let r = await pieces.next(); !r.done; r = await pieces.next()) rest.push(r.value.toString());
    expect(rest.join('')).toBe('bye');
    expect(await received).toBe('HTTP/1.1 200 OK\r\n\r\nfrom the host');
    expect(await result).toEqual({ bytesIn: 34, bytesOut: 32 });
  });

  it('hands a connection to the next accept when a waiting one is cancelled', async () => {
    const egress = local.c.egress;
    if (!egress) throw new Error('sandboxd offers no egress');
    const ac = new AbortController();
    const cancelled = egress.accept(ac.signal);
    ac.abort();
    await expect(cancelled.result).rejects.toMatchObject({ code: 'ABORTED' });
    const { io, result } = egress.accept();
    const { socket, received } = await client(await proxyPort());
    socket.write('x');
    const pieces = io.incoming[Symbol.asyncIterator]();
    expect((await pieces.next()).value?.length).toBe(0);
    expect((await pieces.next()).value?.toString()).toBe('x');
    io.abandon();
    await received;
    await result.catch(() => {});
  });

  it('adds the tenant CA to the bundle the environment names, and takes nothing else', async () => {
    const egress = local.c.egress;
    if (!egress) throw new Error('sandboxd offers no egress');
    const { certPem } = mintCa('sandboxd test CA');
    await egress.trust(certPem);
    const { stdout } = await local.c.exec('printf %s "$SSL_CERT_FILE $NODE_EXTRA_CA_CERTS $PIP_CERT"');
    const [bundle, ...same] = stdout.split(' ');
    expect(same).toEqual([bundle, bundle]);
    expect(readFileSync(bundle as string, 'utf8')).toContain(certPem);
    for (const pem of ['not a certificate', `${certPem}${certPem}`, `${certPem}\n; rm -rf /`])
      await expect(egress.trust(pem)).rejects.toMatchObject({ code: 'INVALID_ARGUMENTS' });
  });

  it('writes the bundle through no FIFO or symlink planted at a temporary name', async () => {
    const egress = local.c.egress;
    if (!egress) throw new Error('sandboxd offers no egress');
    const { stdout } = await local.c.exec('printf %s "$SSL_CERT_FILE"');
    const victim = join(local.sd.outside, 'victim');
    writeFileSync(victim, 'untouched');
    // The names a bundle write once used (pid-named): a symlink out and a FIFO with a reader, whose
    // pipe fills long before a system bundle's ~0.2 MB are written.
    const planted = `${stdout}.${local.sd.child.pid}.tmp`;
    symlinkSync(victim, planted);
    const { certPem } = mintCa('planted names CA');
    await egress.trust(certPem);
    expect(readFileSync(victim, 'utf8')).toBe('untouched');
    expect(lstatSync(stdout).isFile()).toBe(true);
    expect(readFileSync(stdout, 'utf8')).toContain(certPem);
    rmSync(planted, { force: true });
    execFileSync('mkfifo', [planted]);
    const reader = openSync(planted, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      const second = mintCa('planted FIFO CA').certPem;
      await egress.trust(second);
      expect(lstatSync(stdout).isFile()).toBe(true);
      expect(readFileSync(stdout, 'utf8')).toContain(second);
      expect(await local.c.ping()).toBeGreaterThanOrEqual(0);
    } finally {
      closeSync(reader);
    }
  });
});
