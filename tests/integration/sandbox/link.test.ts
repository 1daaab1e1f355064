// The link (host/sandbox/docker/session.ts): with a links folder, a sandbox's sessions move from the
// attach stream to a unix socket in the container's own read-only link folder; the agent cannot
// write there or reach the host through it; a restarted control plane links again; a link that
// cannot be made leaves the session on the attach stream (reported, still serving); removing the
// sandbox removes its link folder.
import { createHash, randomBytes } from 'node:crypto';
import { chmod, readdir, rm } from 'node:fs/promises';
import { Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import type { ConnectSandboxd } from '../../../host/sandbox/docker/index.ts';
import { connectSandboxd } from '../../../host/sandbox/sandboxd/client.ts';
import { dockerFixture } from './fixtures.ts';

const fx = dockerFixture();
afterAll(() => fx.sweep());

/** connectSandboxd, recording for each session whether it runs over a link socket. */
const watched = (): { connect: ConnectSandboxd; seen: boolean[] } => {
  const seen: boolean[] = [];
  return {
    seen,
    connect: (o) => {
      seen.push(o.input instanceof Socket);
      return connectSandboxd(o);
    },
  };
};

describe('sandbox links', () => {
  it('runs the session over the link, byte-exact, with the folder read-only and empty for the agent', async () => {
    const { connect, seen } = watched();
    const provider = fx.provider({ connect });
    const sb = await provider.create({ agentId: 'ln-1', tenantId: 't1' });
    expect(seen).toEqual([false, true]); // first the attach stream, then the link
    const bytes = randomBytes(20 * 1024 * 1024 + 3);
    const parts = async function* () {
      for (let at = 0; at < bytes.length; at += 1 << 20) yield bytes.subarray(at, at + (1 << 20));
    };
    expect((await sb.archive.uploadFile('big.bin', parts())).bytes).toBe(bytes.length);
    const chunks: Buffer[] = [];
    for await (const c of (await sb.archive.downloadFile('big.bin')).content) chunks.push(c);
    const hash = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    expect(hash(Buffer.concat(chunks))).toBe(hash(bytes));
    const probe = await sb.exec(
      'ls -A /run/dsh-link; touch /run/dsh-link/x 2>&1; ln -s /var/run/docker.sock /run/dsh-link/link.sock 2>&1; id -u',
    );
    expect(probe.stdout).toMatch(/Read-only file system[\s\S]*Read-only file system[\s\S]*^1000$/m);
    expect(probe.stdout.split('\n')[0]).not.toMatch(/link\.sock/); // the socket is gone once linked
    // On the host: the container's link folder holds nothing once the link is made.
    const [folder] = await readdir(fx.linksDir);
    expect(await readdir(`${fx.linksDir}/${folder}`)).toEqual([]);
    await provider.close();

    // A control plane started again (same instance) links again.
    const again = watched();
    const next = fx.provider({ connect: again.connect });
    await next.adopt();
    const back = await next.get('ln-1');
    expect((await back?.exec('echo back'))?.stdout).toBe('back\n');
    expect(again.seen).toEqual([false, true]);
    await next.destroy('ln-1');
    expect(await readdir(fx.linksDir)).toEqual([]); // the folder went with the sandbox
  });

  it('links no container when links are off, and makes a folder that went away again before a start', async () => {
    const made = fx.provider();
    const sb = await made.create({ agentId: 'ln-3', tenantId: 't1' });
    await made.close();
    const off = watched();
    const without = fx.provider({ connect: off.connect, links: undefined });
    await without.adopt();
    expect((await (await without.get('ln-3'))?.exec('echo off'))?.stdout).toBe('off\n');
    expect(off.seen).toEqual([false]); // the container has a link folder, but links are off
    await without.close();
    // The folder goes while the container is stopped: the next start makes it again and links.
    await fx.docker.getContainer(sb.id).stop({ t: 0 });
    for (const f of await readdir(fx.linksDir)) await rm(`${fx.linksDir}/${f}`, { recursive: true });
    const on = watched();
    const next = fx.provider({ connect: on.connect });
    await next.adopt();
    expect((await (await next.get('ln-3'))?.exec('echo on'))?.stdout).toBe('on\n');
    expect(on.seen).toEqual([false, true]);
    await next.destroy('ln-3');
  });

  it('stays on the attach stream when the link cannot be made, and says so', async () => {
    const errors: string[] = [];
    const { connect, seen } = watched();
    const provider = fx.provider({ connect, onError: (e) => errors.push(String(e)) });
    const sb = await provider.create({ agentId: 'ln-2', tenantId: 't1' });
    await provider.close();
    // sandboxd dials as the agent's uid: a folder it cannot enter fails the dial.
    for (const f of await readdir(fx.linksDir)) await chmod(`${fx.linksDir}/${f}`, 0o700);
    const next = fx.provider({ connect, onError: (e) => errors.push(String(e)) });
    await next.adopt();
    const back = await next.get('ln-2');
    expect((await back?.exec('echo still'))?.stdout).toBe('still\n');
    expect(seen.slice(2)).toEqual([false, false]); // over the attach stream, then over it again
    expect(errors.join('\n')).toMatch(/link was not made|Could not dial/);
    expect(sb.id).toBe(back?.id);
    await next.destroy('ln-2');
  });
});
