// The link (sandbox-wire/protocol.ts LINK_VERSION): sandboxd dials the host's unix socket with the
// token it got over stdin, and the session then runs over that socket; a connection without the
// token is refused; the stdio session can come back with a new hello; a link that closes ends its
// session in sandboxd, so a new hello over stdin serves again.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectSandboxd, type SandboxdClient } from '../../../host/sandbox/sandboxd/client.ts';
import { listenLink } from '../../../host/sandbox/sandboxd/link.ts';
import { linkPreface } from '../../../sandbox-wire/protocol.ts';
import { type LocalSandboxd, startLocalSandboxd } from './harness.ts';

const dir = mkdtempSync(join(tmpdir(), 'dsh-link-'));
const path = join(dir, 'link.sock');

/** Has sandboxd dial a fresh listener; resolves with a client over the link socket. */
const link = async (
  over: SandboxdClient,
  root: string,
): Promise<{ client: SandboxdClient; socket: Socket }> => {
  const listener = await listenLink(path);
  const [socket] = await Promise.all([listener.accepted, over.dial?.(listener.token)]);
  listener.close();
  const client = await connectSandboxd({ input: socket, output: socket, root, timeoutMs: 10_000 });
  return { client, socket };
};

describe('sandboxd link', () => {
  let sd: LocalSandboxd;
  let stdio: SandboxdClient;
  beforeAll(async () => {
    sd = await startLocalSandboxd({ SANDBOXD_LINK: path });
    stdio = await sd.connect();
  });
  afterAll(async () => {
    stdio?.close();
    await sd?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('says it can dial, and serves the session over the socket once dialled', async () => {
    expect(stdio.info.link).toBe(true);
    const { client, socket } = await link(stdio, sd.root);
    // The listener and its socket file are gone once the link is made.
    expect(existsSync(path)).toBe(false);
    const bytes = randomBytes(3 * 1024 * 1024 + 17);
    writeFileSync(join(sd.root, 'big.bin'), bytes);
    const chunks: Buffer[] = [];
    for await (const chunk of client.fs.readStream?.('big.bin', 0, bytes.length) ?? []) chunks.push(chunk);
    const got = Buffer.concat(chunks);
    expect(createHash('sha256').update(got).digest('hex')).toBe(
      createHash('sha256').update(bytes).digest('hex'),
    );
    expect((await client.exec('echo over-the-link')).stdout).toBe('over-the-link\n');
    client.close();
    socket.destroy();
  });

  it('refuses a connection that does not bring the token, and takes the one that does', async () => {
    const listener = await listenLink(path);
    const knock = (text: string) => {
      const s = netConnect(path, () => s.write(text));
      s.on('error', () => {});
      return new Promise<void>((resolve) => s.on('close', () => resolve()));
    };
    // A wrong token is closed at once; a short knock waits, and goes when the link is made.
    await knock('DSHLINK1 '.padEnd(74, '0'));
    const waiting = knock('DSHLINK1 short');
    const again = await sd.connect();
    const [socket] = await Promise.all([listener.accepted, again.dial?.(listener.token)]);
    listener.close();
    await waiting;
    const client = await connectSandboxd({ input: socket, output: socket, root: sd.root, timeoutMs: 10_000 });
    expect(await client.ping()).toBeGreaterThanOrEqual(0);
    client.close();
    socket.destroy();
    again.close();
  });

  it('gives up when nobody dials with the token in time', async () => {
    const listener = await listenLink(path, 200);
    const s = netConnect(path, () => s.write(linkPreface('f'.repeat(64))));
    s.on('error', () => {});
    await expect(listener.accepted).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE' });
    expect(existsSync(path)).toBe(false);
    s.destroy();
  });

  it('serves stdin again after the link closes, and refuses a malformed token', async () => {
    const first = await sd.connect();
    const { client, socket } = await link(first, sd.root);
    socket.destroy();
    await client.closed;
    first.close();
    const back = await sd.connect();
    expect((await back.exec('echo back')).stdout).toBe('back\n');
    await expect(back.dial?.('not a token')).rejects.toMatchObject({ code: 'INVALID_ARGUMENTS' });
    stdio = back;
  });

  it('gives the link up at once when more than 8 connections knock first', async () => {
    const listener = await listenLink(path, 10_000);
    const t0 = performance.now();
    const knocks = Array.from({ length: 9 }, () => {
      const s = netConnect(path);
      s.on('error', () => {});
      return s;
    });
    await expect(listener.accepted).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE' });
    expect(performance.now() - t0).toBeLessThan(5000); // not at the 10 s deadline
    expect(existsSync(path)).toBe(false);
    for (const s of knocks) s.destroy();
  });

  it('closes the link when another client says hello on stdin, so its host knows at once', async () => {
    const first = await sd.connect();
    const { client, socket } = await link(first, sd.root);
    first.close();
    const taker = await sd.connect();
    const reason = await client.closed;
    expect(reason.code).toBe('SANDBOX_UNAVAILABLE');
    expect((await taker.exec('echo taken')).stdout).toBe('taken\n');
    socket.destroy();
    stdio = taker;
  });

  it('is refused when the socket path is too long for a unix socket', async () => {
    await expect(listenLink(join(dir, 'x'.repeat(120)))).rejects.toMatchObject({
      code: 'SANDBOX_UNAVAILABLE',
    });
  });
});

describe('sandboxd without a link', () => {
  it('does not offer to dial', async () => {
    const sd = await startLocalSandboxd();
    try {
      const c = await sd.connect();
      expect(c.info.link).toBe(false);
      expect(c.dial).toBeUndefined();
      c.close();
    } finally {
      await sd.stop();
    }
  });
});
