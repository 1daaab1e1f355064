// sandboxd against a workspace that changes under it: a directory swapped for a symlink to outside
// the root while calls run (check-then-use races), FIFOs and other non-regular files where a regular
// file is expected, names that are not UTF-8, and links that would make one walk take tens of
// thousands of steps. Run locally, where sandboxd's own confinement is
// the only boundary.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxdClient } from '../../../host/sandbox/sandboxd/client.ts';
import { fromBytes } from '../../../sandbox-wire/byte-names.ts';
import { until as waitUntil } from '../../helpers/until.ts';
import { gone, type LocalSandboxd, startLocalSandboxd, useLocalSandboxd } from './harness.ts';

const local = useLocalSandboxd();
const codeOf = async (p: Promise<unknown>): Promise<string | undefined> =>
  p.then(
    () => undefined,
    (e: { code?: string }) => e.code,
  );

describe('a directory swapped for a symlink to outside while calls run', () => {
  let swapper: ChildProcess | undefined;
  beforeAll(() => {
    const { root, outside } = local.sd;
    mkdirSync(join(outside, 'od'));
    writeFileSync(join(outside, 'od', 'f'), 'SECRET');
    writeFileSync(join(outside, 'od', 'outside-only'), 'SECRET');
    mkdirSync(join(root, 'd'));
    writeFileSync(join(root, 'd', 'f'), 'inside');
    // `d` is a real directory, then a symlink to outside, then the directory again, forever (resting
    // a little as a directory, so that some calls see it whole).
    swapper = spawn(
      'bash',
      [
        '-c',
        `cd "$1" && while :; do mv -T d d.x && ln -s "$2/od" d && rm d && mv -T d.x d && sleep 0.003; done`,
        'swap',
        root,
        outside,
      ],
      { stdio: 'ignore' },
    );
  });
  afterEach(() => {
    // Nothing was ever written or removed outside.
    expect(readdirSync(join(local.sd.outside, 'od')).sort()).toEqual(['f', 'outside-only']);
  });
  afterAll(() => {
    swapper?.kill('SIGKILL');
  });

  const many = async (n: number, fn: () => Promise<unknown>): Promise<unknown[]> => {
    const out: unknown[] = [];
    for (let i = 0; i < n; i += 16)
      out.push(...(await Promise.all(Array.from({ length: 16 }, () => fn().catch((e) => e)))));
    return out;
  };
  /** `n` calls, and more while none has been answered with `seen` (a race test that never ran is no test). */
  const until = async (n: number, fn: () => Promise<unknown>, seen: RegExp): Promise<string> => {
    let all = JSON.stringify(await many(n, fn));
    for (let i = 0; i < 100 && !seen.test(all); i++) all += JSON.stringify(await many(16, fn));
    expect(all).toMatch(seen);
    return all;
  };

  it('read and readRange never return what is outside', async () => {
    const { c } = local;
    const reads = await until(600, () => c.fs.readFile('d/f').then((b) => b.toString()), /"inside"/);
    const ranges = await until(
      300,
      () => c.fs.readRange('d/f', 0, 100).then((r) => r.data.toString()),
      /"inside"/,
    );
    expect(reads + ranges).not.toContain('SECRET');
  });

  it('list, glob and grep never show what is outside', async () => {
    const { c } = local;
    const lists = await until(300, () => c.fs.list('d'), /"name":"f"/);
    const globs = await until(300, () => c.fs.glob('**', { cwd: 'd' }), /\/d\/f"/);
    const greps = await until(300, () => c.fs.grep('SECRET|inside', { path: 'd' }), /inside/);
    expect(lists + globs + greps).not.toMatch(/SECRET|outside-only/);
  });

  it('write, append, mkdir and remove never touch what is outside', async () => {
    const { c } = local;
    await many(200, () => c.fs.writeFile('d/planted', 'x'));
    await many(100, () => c.fs.mkdir('d/newdir', { recursive: true }));
    await many(100, () => c.fs.remove('d/f'));
    await many(100, () => c.fs.writeFile('d/f', 'inside'));
  });
});

describe('files that are not regular files', () => {
  beforeAll(() => {
    const { root } = local.sd;
    spawnSync('mkfifo', [join(root, 'fifo')]);
    mkdirSync(join(root, 'withfifo'));
    spawnSync('mkfifo', [join(root, 'withfifo', 'p')]);
    writeFileSync(join(root, 'withfifo', 'x.txt'), 'needle\n');
  });

  it('read, readRange, append and grep refuse a FIFO at once instead of blocking on it', async () => {
    const { c } = local;
    expect(await codeOf(c.fs.readFile('fifo'))).toBe('NOT_A_FILE');
    expect(await codeOf(c.fs.readRange('fifo', 0, 10))).toBe('NOT_A_FILE');
    expect(await codeOf(c.fs.appendFile('fifo', Buffer.from('x')))).toBe('NOT_A_FILE');
    expect(await codeOf(c.fs.grep('x', { path: 'fifo' }))).toBe('NOT_A_FILE');
    // A directory search skips it and finds the rest.
    expect((await c.fs.grep('needle', { path: 'withfifo' })).matches.map((m) => m.path)).toEqual([
      `${local.sd.root}/withfifo/x.txt`,
    ]);
    // And the next call is answered as usual.
    expect((await c.fs.stat('fifo')).type).toBe('other');
  });

  it('grep refuses one file larger than it searches instead of reading it all', async () => {
    const { c } = local;
    spawnSync('truncate', ['-s', '64G', join(local.sd.root, 'sparse')]);
    expect(await codeOf(c.fs.grep('x', { path: 'sparse' }))).toBe('FILE_TOO_LARGE');
    // In a directory, it is skipped.
    expect((await c.fs.grep('x', { path: '.', include: 'sparse' })).matches).toEqual([]);
  });
});

describe('names that are not UTF-8', () => {
  it('are listed, globbed and grepped as byte-names strings that reach the same file again', async () => {
    const { c, sd } = local;
    const raw = Buffer.concat([Buffer.from('bad-'), Buffer.from([0xff, 0xfe]), Buffer.from('.txt')]);
    mkdirSync(join(sd.root, 'raw'));
    writeFileSync(Buffer.concat([Buffer.from(`${sd.root}/raw/`), raw]), 'raw bytes\n');
    const name = fromBytes(raw);
    const [entry] = await c.fs.list('raw');
    expect(entry?.name).toBe(name);
    expect((await c.fs.readFile(`raw/${name}`)).toString()).toBe('raw bytes\n');
    expect((await c.fs.stat(`raw/${name}`)).size).toBe(10);
    expect((await c.fs.glob('raw/*')).paths).toEqual([`${sd.root}/raw/${name}`]);
    expect((await c.fs.grep('raw bytes', { path: 'raw' })).matches.map((m) => m.path)).toEqual([
      `${sd.root}/raw/${name}`,
    ]);
    await c.fs.rename(`raw/${name}`, `raw/${name}.2`);
    await c.fs.writeFile(`raw/${name}`, 'again');
    expect(
      readdirSync(join(sd.root, 'raw'), { encoding: 'buffer' })
        .map((b) => b.toString('hex'))
        .sort(),
    ).toEqual([raw.toString('hex'), Buffer.concat([raw, Buffer.from('.2')]).toString('hex')].sort());
    expect(existsSync(join(sd.root, 'raw', 'bad-\ufffd\ufffd.txt'))).toBe(false);
  });
});

describe('deadlines', () => {
  // A ripgrep that hangs, as the real one does on a FIFO swapped in after our checks.
  const bin = mkdtempSync(join(tmpdir(), 'sandboxd-fake-rg-'));
  let sd: LocalSandboxd;
  let c: SandboxdClient;
  beforeAll(async () => {
    writeFileSync(
      join(bin, 'rg'),
      `#!/bin/sh\n[ "$1" = --version ] && exit 0\necho $$ > "${bin}/pid"\nexec sleep 1000\n`,
    );
    chmodSync(join(bin, 'rg'), 0o755);
    sd = await startLocalSandboxd({ SANDBOXD_OP_DEADLINE_MS: '500', PATH: `${bin}:${process.env.PATH}` });
    c = await sd.connect();
  });
  afterAll(async () => {
    c?.close();
    await sd?.stop();
    rmSync(bin, { recursive: true, force: true });
  });

  it('a call past its deadline is answered TOOL_TIMEOUT, its work is stopped, and the next call is answered', async () => {
    const e = await c.fs.grep('x').then(
      () => undefined,
      (err: { code?: string; message?: string }) => err,
    );
    // Without the deadline the call would wait on rg for 1000 s and fail otherwise (the client's 15 s).
    expect(e?.code).toBe('TOOL_TIMEOUT');
    const pid = Number(readFileSync(join(bin, 'pid'), 'utf8'));
    await waitUntil(() => gone(pid), { what: 'the hung rg to be stopped' });
    await c.fs.writeFile('after.txt', 'ok');
    expect((await c.fs.readFile('after.txt')).toString()).toBe('ok');
    expect(await c.ping()).toBeGreaterThan(0);
  });
});

describe('symlinks resolved beneath the root', () => {
  it('follows chains, relative and absolute targets and `..` inside the root, and refuses loops and escapes', async () => {
    const { c, sd } = local;
    await c.fs.writeFile('sl/real/t.txt', 'target');
    symlinkSync('l2', join(sd.root, 'sl', 'l1'));
    symlinkSync('real/../real', join(sd.root, 'sl', 'l2'));
    symlinkSync(join(sd.root, 'sl', 'real', 't.txt'), join(sd.root, 'sl', 'abs'));
    symlinkSync('.', join(sd.root, 'sl', 'self'));
    symlinkSync('loopb', join(sd.root, 'sl', 'loopa'));
    symlinkSync('loopa', join(sd.root, 'sl', 'loopb'));
    symlinkSync('../..', join(sd.root, 'sl', 'up'));
    expect((await c.fs.readFile('sl/l1/t.txt')).toString()).toBe('target');
    expect((await c.fs.readFile('sl/abs')).toString()).toBe('target');
    expect((await c.fs.readFile('sl/self/self/real/t.txt')).toString()).toBe('target');
    expect((await c.fs.list('sl/self')).map((e) => e.name)).toContain('real');
    expect(await codeOf(c.fs.readFile('sl/loopa'))).toBe('INVALID_ARGUMENTS');
    expect(await codeOf(c.fs.readFile('sl/up/outside/x'))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(c.fs.list('sl/up'))).toBe('PATH_OUTSIDE_WORKSPACE');
    // Not following the final link: stat and remove see the link itself.
    expect((await c.fs.stat('sl/l1')).type).toBe('symlink');
    await c.fs.remove('sl/l1');
    expect((await c.fs.readFile('sl/real/t.txt')).toString()).toBe('target');
  });

  it('refuses a walk of more steps than any meant path takes, as a loop, and serves on', async () => {
    const { c, sd } = local;
    mkdirSync(join(sd.root, 'st', 'd'), { recursive: true });
    writeFileSync(join(sd.root, 'st', 'f'), 'far');
    // 40 links (what Linux follows), each target 800 `d/..` then the next: 64,000 steps in all, each
    // a system call on sandboxd's loop. One such link alone is a path a program may mean.
    const body = 'd/../'.repeat(800);
    for (let i = 0; i < 39; i++) symlinkSync(`${body}l${i + 1}`, join(sd.root, 'st', `l${i}`));
    symlinkSync(`${body}f`, join(sd.root, 'st', 'l39'));
    expect((await c.fs.readFile('st/l39')).toString()).toBe('far');
    expect(await codeOf(c.fs.readFile('st/l0'))).toBe('INVALID_ARGUMENTS');
    expect(await codeOf(c.fs.writeFile('st/l0/x', 'x'))).toBe('INVALID_ARGUMENTS');
    expect((await c.fs.readFile('st/f')).toString()).toBe('far');
  });
});
