// What sandboxd leaves until after its first answer (server.ts onFirstAnswer: the egress proxy's
// listen and CA bundle, the command spawner) is never missing when a call needs it: a command run
// as the very first call, or right after the host's ping, has the proxy's variables and a proxy
// that answers; and the spawner is running once the first answer is out.
import { readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type LocalSandboxd, startLocalSandboxd } from './harness.ts';

const started: LocalSandboxd[] = [];
afterEach(async () => {
  for (const sd of started.splice(0)) await sd.stop();
});

/** The proxy's port from a command's environment, checked to answer (503: no control plane). */
const proxyAnswers = async (env: string): Promise<boolean> => {
  const m = /^http:\/\/127\.0\.0\.1:(\d+)$/.exec(env);
  if (!m) return false;
  const socket = connect(Number(m[1]), '127.0.0.1');
  const text = await new Promise<string>((resolve) => {
    let got = '';
    socket.on('connect', () => socket.write('GET http://example.invalid/ HTTP/1.1\r\nHost: x\r\n\r\n'));
    socket.on('data', (b: Buffer) => {
      got += b.toString();
    });
    socket.on('close', () => resolve(got));
    socket.on('error', () => resolve(got));
  });
  return text.startsWith('HTTP/1.1 503');
};

describe('sandboxd boot: work left until after the first answer', () => {
  it('gives a command run as the very first call the proxy and its CA bundle', async () => {
    const sd = await startLocalSandboxd();
    started.push(sd);
    const c = await sd.connect();
    const { stdout } = await c.exec('printf "%s\\n%s" "$HTTP_PROXY" "$SSL_CERT_FILE"');
    const [proxy, bundle] = stdout.split('\n');
    expect(await proxyAnswers(proxy ?? '')).toBe(true);
    expect(readFileSync(bundle ?? '', 'utf8').length).toBeGreaterThan(0);
    c.close();
  });

  it('starts the proxy and the spawner after the answer to a first ping', async () => {
    const sd = await startLocalSandboxd();
    started.push(sd);
    const c = await sd.connect();
    await c.ping();
    // The spawner (sandboxd's one child until a command runs) comes up without any exec.
    const spawner = (): boolean =>
      readdirSync('/proc')
        .filter((p) => /^\d+$/.test(p))
        .some((p) => {
          try {
            return readFileSync(join('/proc', p, 'status'), 'utf8').includes(`PPid:\t${sd.child.pid}\n`);
          } catch {
            return false;
          }
        });
    const until = Date.now() + 10_000;
    while (!spawner() && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    expect(spawner()).toBe(true);
    const { stdout } = await c.exec('printf %s "$HTTP_PROXY"');
    expect(await proxyAnswers(stdout)).toBe(true);
    c.close();
  });
});
