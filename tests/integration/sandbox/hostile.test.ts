// Symlinks an agent plants in its workspace (to /, /proc/self/root, /tmp, ../../..) must not let any
// host-initiated operation (fs, archive upload/download) read or write outside the workspace; a
// re-attach resumes the same sandboxd process.

import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../../host/sandbox/types.ts';
import { codeOf, makeTar, readTar } from '../../contract/sandbox/suite.ts';
import { dockerFixture } from './fixtures.ts';

const fx = dockerFixture();
const provider = fx.provider();
let sb: Sandbox;

/** Run a shell command in the container as the agent user, bypassing sandboxd (raw Docker exec). */
const raw = async (cmd: string): Promise<string> => {
  const exec = await fx.docker.getContainer(sb.id).exec({
    Cmd: ['sh', '-c', cmd],
    AttachStdout: true,
    AttachStderr: true,
    User: '1000:1000',
    WorkingDir: '/workspace',
  });
  const stream = await exec.start({});
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (c: Buffer) => chunks.push(c));
  fx.docker.modem.demuxStream(stream, out, out);
  await new Promise((r) => stream.on('end', r));
  return Buffer.concat(chunks).toString();
};

beforeAll(async () => {
  sb = await provider.create({ tenantId: 't', agentId: 'hostile' });
  await raw(
    'ln -s / root; ln -s /proc/self/root procroot; ln -s ../../.. up; ln -s /tmp tmplink; mkdir -p d; ln -s /etc/passwd d/passwd; echo secret > /tmp/outside.txt; echo ok > inside.txt',
  );
});
afterAll(async () => {
  await provider.destroy('hostile').catch(() => {});
  await provider.close();
  await fx.sweep();
});

describe('planted symlinks', () => {
  it('cannot be read through', async () => {
    for (const p of [
      'root/etc/passwd',
      'procroot/etc/passwd',
      'up/etc/passwd',
      'd/passwd',
      'tmplink/outside.txt',
    ]) {
      expect(await codeOf(sb.fs.readFile(p)), p).toBe('PATH_OUTSIDE_WORKSPACE');
    }
    expect((await sb.fs.readFile('inside.txt')).toString()).toBe('ok\n');
  });
  it('cannot be written through, listed through or searched through', async () => {
    expect(await codeOf(sb.fs.writeFile('tmplink/pwned', 'x'))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(sb.fs.mkdir('tmplink/newdir', { recursive: true }))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(sb.fs.list('root'))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(sb.fs.rename('inside.txt', 'tmplink/moved.txt'))).toBeDefined();
    const g = await sb.fs.grep('root:', {}).catch(() => ({ matches: [] }));
    expect(g.matches.filter((m) => !m.path.startsWith('/workspace/'))).toEqual([]);
    expect(g.matches.some((m) => m.text.startsWith('root:x:0:0'))).toBe(false);
    expect(await raw('ls /tmp; cat /workspace/inside.txt')).not.toMatch(/pwned|newdir|moved/);
  });
  it('are refused by uploads, including the two-step link-then-write shape', async () => {
    expect(
      await codeOf(sb.archive.upload('tmplink', await makeTar([{ name: 'evil.txt', body: 'x' }]))),
    ).toMatch(/^(NOT_A_DIRECTORY|PATH_OUTSIDE_WORKSPACE)$/);
    expect(
      await codeOf(sb.archive.upload('.', await makeTar([{ name: 'tmplink/evil2.txt', body: 'x' }]))),
    ).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(sb.archive.upload('.', await makeTar([{ name: 'up/evil3.txt', body: 'x' }])))).toBe(
      'PATH_OUTSIDE_WORKSPACE',
    );
    expect(await raw('ls / /tmp')).not.toMatch(/evil/);
  });
  it('never leave the sandbox in a download', async () => {
    const files = await readTar(await sb.archive.download('.'));
    expect(files['inside.txt']).toBe('ok\n');
    for (const name of Object.keys(files))
      expect(name).not.toMatch(/^(root|procroot|up|tmplink)(\/|$)|^d\/passwd$/);
    expect(Object.values(files).join('\n')).not.toMatch(/root:x:0:0|secret/);
    expect(await codeOf(sb.archive.download('root'))).toBe('NOT_A_FILE');
    expect(await codeOf(sb.archive.download('d/passwd'))).toBe('NOT_A_FILE');
  });
  it('cannot win a swap race against reads', async () => {
    await raw('mkdir -p race && echo inside > race/f');
    await raw(
      '(for i in $(seq 1 400); do rm -rf race; ln -sfn /etc race; rm -f race; mkdir -p race; echo inside > race/f; done) >/dev/null 2>&1 &',
    );
    for (let i = 0; i < 100; i++) {
      const r = await sb.fs.readFile('race/f').then(
        (b) => b.toString(),
        () => 'refused',
      );
      expect(['inside\n', 'refused', '']).toContain(r);
    }
  });
});

describe('re-attach', () => {
  it('resumes the same sandboxd process after a detach', async () => {
    const before = (await sb.exec('echo $PPID')).stdout;
    await sb.detach();
    const again = await provider.get('hostile');
    expect((await again?.exec('echo $PPID'))?.stdout).toBe(before);
  });
});
