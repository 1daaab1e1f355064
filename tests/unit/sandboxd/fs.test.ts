import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxdClient } from '../../../host/sandbox/sandboxd/client.ts';
import { openConnection } from '../../../host/sandbox/sandboxd/connection.ts';
import { MAX_BINARY_BYTES } from '../../../sandbox-wire/protocol.ts';
import { type LocalSandboxd, startLocalSandboxd } from './harness.ts';

const codeOf = async (p: Promise<unknown>): Promise<string | undefined> =>
  p.then(
    () => undefined,
    (e: { code?: string }) => e.code,
  );

let sd: LocalSandboxd;
let c: SandboxdClient;
beforeAll(async () => {
  sd = await startLocalSandboxd();
  c = await sd.connect();
});
afterAll(async () => {
  c?.close();
  await sd?.stop();
});

describe('sandboxd file operations', () => {
  it('writes (creating parents), reads back, and reads a range', async () => {
    await c.fs.writeFile('deep/er/file.bin', Buffer.from([0, 1, 2, 255, 254]));
    expect([...(await c.fs.readFile('deep/er/file.bin'))]).toEqual([0, 1, 2, 255, 254]);
    expect([...(await c.fs.readFile(`${sd.root}/deep/er/file.bin`, { offset: 1, length: 3 }))]).toEqual([
      1, 2, 255,
    ]);
    expect(readFileSync(join(sd.root, 'deep/er/file.bin'))).toEqual(Buffer.from([0, 1, 2, 255, 254]));
  });

  it('replaces a file atomically, keeps its mode, and leaves no temp files', async () => {
    await c.fs.writeFile('m.sh', 'echo 1', { mode: 0o755 });
    await c.fs.writeFile('m.sh', 'echo 2');
    const st = await c.fs.stat('m.sh');
    expect(st).toMatchObject({ path: `${sd.root}/m.sh`, type: 'file', size: 6, mode: 0o755 });
    expect((await c.fs.list('.')).map((e) => e.name).filter((n) => n.includes('sandboxd-tmp'))).toEqual([]);
  });

  it('refuses large reads without a length, and directories as files', async () => {
    await c.fs.writeFile('five.txt', '12345');
    // A second client takes the session over; the first one learns it at its next answer.
    const small = await sd.connect({ maxReadBytes: 4 });
    try {
      expect(await codeOf(small.fs.readFile('five.txt'))).toBe('FILE_TOO_LARGE');
      expect((await small.fs.readFile('five.txt', { offset: 1, length: 100 })).toString()).toBe('2345');
      expect(await codeOf(c.fs.stat('five.txt'))).toBe('SANDBOX_UNAVAILABLE');
    } finally {
      small.close();
      c = await sd.connect();
    }
    expect(await codeOf(c.fs.readFile('deep'))).toBe('NOT_A_FILE');
    expect(await codeOf(c.fs.writeFile('deep', 'x'))).toBe('NOT_A_FILE');
    expect(await codeOf(c.fs.readFile('nope.txt'))).toBe('FILE_NOT_FOUND');
    expect(await codeOf(c.fs.writeFile('five.txt/under', 'x'))).toBe('NOT_A_DIRECTORY');
    expect(await codeOf(c.fs.writeFile('five.txt/deeper/under', 'x'))).toBe('NOT_A_DIRECTORY');
  });

  it('appends to an existing file only (never creates, never follows a link), then sets the mode', async () => {
    await c.fs.writeFile('app/log.txt', 'one ');
    await c.fs.appendFile('app/log.txt', Buffer.from('two '));
    await c.fs.appendFile('app/log.txt', Buffer.from('three'), { mode: 0o444 });
    expect(readFileSync(join(sd.root, 'app/log.txt'), 'utf8')).toBe('one two three');
    expect((await c.fs.stat('app/log.txt')).mode).toBe(0o444);
    expect(await codeOf(c.fs.appendFile('app/new.txt', Buffer.from('x')))).toBe('FILE_NOT_FOUND');
    expect(existsSync(join(sd.root, 'app/new.txt'))).toBe(false);
    expect(await codeOf(c.fs.appendFile('app', Buffer.from('x')))).toBe('NOT_A_FILE');
    expect(await codeOf(c.fs.appendFile('.', Buffer.from('x')))).toBe('NOT_A_FILE');
    await c.fs.writeFile('app/real.txt', 'r');
    symlinkSync('real.txt', join(sd.root, 'app/link.txt'));
    expect(await codeOf(c.fs.appendFile('app/link.txt', Buffer.from('x')))).toBe('NOT_A_FILE');
    expect(readFileSync(join(sd.root, 'app/real.txt'), 'utf8')).toBe('r');
    expect(await codeOf(c.fs.appendFile('../outside/x', Buffer.from('x')))).toBe('PATH_OUTSIDE_WORKSPACE');
  });

  it('stats, lists sorted, and answers exists', async () => {
    await c.fs.mkdir('ls/b', { recursive: true });
    await c.fs.writeFile('ls/a.txt', 'aa');
    await c.fs.writeFile('ls/c.txt', 'ccc');
    expect(await c.fs.list('ls')).toEqual([
      { name: 'a.txt', type: 'file', size: 2 },
      { name: 'b', type: 'directory', size: 0 },
      { name: 'c.txt', type: 'file', size: 3 },
    ]);
    expect(await c.fs.exists('ls/a.txt')).toBe(true);
    expect(await c.fs.exists('ls/zzz')).toBe(false);
    expect(await c.fs.exists('ls/a.txt/under-a-file')).toBe(false);
    expect(await codeOf(c.fs.list('ls/a.txt'))).toBe('NOT_A_DIRECTORY');
    symlinkSync('a.txt', join(sd.root, 'ls/link'));
    expect((await c.fs.stat('ls/link')).type).toBe('symlink');
  });

  it('lists a large directory whole and sorted: a file with its size, a directory and a symlink with 0', async () => {
    // Over 2 of list's slices (sandboxd reads 1000 entries between turns of its event loop).
    const dir = join(sd.root, 'big');
    spawnSync('mkdir', ['-p', `${dir}/sub`]);
    for (let i = 0; i < 2500; i++)
      writeFileSync(join(dir, `f${String(i).padStart(4, '0')}`), 'x'.repeat(i % 7));
    symlinkSync('f0003', join(dir, 'link'));
    symlinkSync('nowhere', join(dir, 'dangling'));
    const entries = await c.fs.list('big');
    expect(entries).toHaveLength(2503);
    expect(entries.slice(0, 2)).toEqual([
      { name: 'dangling', type: 'symlink', size: 0 },
      { name: 'f0000', type: 'file', size: 0 },
    ]);
    expect(entries.find((e) => e.name === 'f2499')).toEqual({ name: 'f2499', type: 'file', size: 2499 % 7 });
    expect(entries.slice(-2)).toEqual([
      { name: 'link', type: 'symlink', size: 0 },
      { name: 'sub', type: 'directory', size: 0 },
    ]);
  });

  it('mkdir, remove and rename', async () => {
    expect(await codeOf(c.fs.mkdir('no/parent'))).toBe('FILE_NOT_FOUND');
    await c.fs.mkdir('mk');
    await c.fs.mkdir('mk'); // exists: fine
    await c.fs.writeFile('mk/f', 'x');
    expect(await codeOf(c.fs.mkdir('mk/f'))).toBe('NOT_A_DIRECTORY');
    expect(await codeOf(c.fs.remove('mk'))).toBe('DIRECTORY_NOT_EMPTY');
    await c.fs.rename('mk/f', 'mk/g');
    expect(await c.fs.exists('mk/f')).toBe(false);
    expect((await c.fs.readFile('mk/g')).toString()).toBe('x');
    expect(await codeOf(c.fs.rename('mk', 'mk/inside'))).toBe('CONFLICT');
    await c.fs.rename('mk', 'mk2');
    await c.fs.remove('mk2', { recursive: true });
    expect(existsSync(join(sd.root, 'mk2'))).toBe(false);
    expect(await codeOf(c.fs.remove('.'))).toBe('CONFLICT');
    expect(await codeOf(c.fs.remove('gone'))).toBe('FILE_NOT_FOUND');
  });

  it('globs files only, sorted, with ** crossing directories and * not', async () => {
    for (const f of ['g/a.ts', 'g/b.js', 'g/sub/c.ts', 'g/sub/deeper/d.ts', 'g/.hidden.ts'])
      await c.fs.writeFile(f, 'x');
    const rel = (paths: string[]) => paths.map((p) => p.slice(sd.root.length + 1));
    expect(rel((await c.fs.glob('g/*.ts')).paths)).toEqual(['g/.hidden.ts', 'g/a.ts']);
    expect(rel((await c.fs.glob('**/*.ts', { cwd: 'g' })).paths)).toEqual([
      'g/.hidden.ts',
      'g/a.ts',
      'g/sub/c.ts',
      'g/sub/deeper/d.ts',
    ]);
    expect(await c.fs.glob(`${sd.root}/g/sub/*.ts`)).toEqual({
      paths: [`${sd.root}/g/sub/c.ts`],
      truncated: false,
    });
    expect(await c.fs.glob('**/*.ts', { cwd: 'g', limit: 2 })).toMatchObject({
      truncated: true,
      paths: { length: 2 },
    });
    expect(await c.fs.glob('*.ts', { cwd: 'missing' })).toEqual({ paths: [], truncated: false });
  });

  it('greps with line numbers, include, ignoreCase and limit', async () => {
    await c.fs.writeFile('gr/one.txt', 'alpha\nBeta\ngamma beta\n');
    await c.fs.writeFile('gr/two.md', 'beta\n');
    await c.fs.writeFile('gr/bin.dat', Buffer.from('beta\0beta'));
    expect((await c.fs.grep('beta', { path: 'gr' })).matches).toEqual([
      { path: `${sd.root}/gr/one.txt`, line: 3, text: 'gamma beta' },
      { path: `${sd.root}/gr/two.md`, line: 1, text: 'beta' },
    ]);
    expect(
      (await c.fs.grep('beta', { path: 'gr', include: '*.txt', ignoreCase: true })).matches.map(
        (m) => m.line,
      ),
    ).toEqual([2, 3]);
    expect(await c.fs.grep('a', { path: 'gr/one.txt', limit: 1 })).toMatchObject({
      truncated: true,
      matches: [{ line: 1 }],
    });
    expect(await codeOf(c.fs.grep('(unclosed', { path: 'gr' }))).toBe('INVALID_ARGUMENTS');
  });

  it('skips hidden and ignored files when asked, as ripgrep does (the walker without ripgrep too)', async () => {
    await c.fs.writeFile('ig/.gitignore', 'node_modules/\n*.log\n!keep.log\n');
    await c.fs.writeFile('ig/src/.ignore', '/gen.ts\n');
    for (const f of ['src/a.ts', 'src/gen.ts', '.git/HEAD', 'node_modules/m/i.js', 'x.log', 'keep.log'])
      await c.fs.writeFile(`ig/${f}`, 'needle\n');
    const found = async (path: string) =>
      (await c.fs.grep('needle', { path, skipIgnored: true })).matches.map((m) =>
        m.path.slice(sd.root.length),
      );
    expect(await found('ig')).toEqual(['/ig/keep.log', '/ig/src/a.ts']);
    expect(await found('ig/node_modules')).toEqual(['/ig/node_modules/m/i.js']);
    expect((await c.fs.grep('needle', { path: 'ig' })).matches).toHaveLength(6);
  });
});

describe('confinement', () => {
  it('refuses lexical escapes on the host, before anything is sent', async () => {
    expect(await codeOf(c.fs.readFile('../outside/x'))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(c.fs.writeFile('/etc/passwd', 'x'))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(c.fs.writeFile(`${sd.outside}/x`, 'x'))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(c.fs.rename('a', '../b'))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(c.exec('true', { cwd: '..' }))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(existsSync(join(sd.outside, 'x'))).toBe(false);
  });

  it('refuses to read or write through a symlink that leaves the root', async () => {
    writeFileSync(join(sd.outside, 'secret'), 'top secret');
    symlinkSync('/', join(sd.root, 'slash'));
    symlinkSync(sd.outside, join(sd.root, 'out'));
    symlinkSync(join(sd.outside, 'secret'), join(sd.root, 'secret-link'));
    expect(await codeOf(c.fs.readFile('out/secret'))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(c.fs.readFile('secret-link'))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(c.fs.readFile('slash/etc/hostname'))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(c.fs.writeFile('out/planted', 'x'))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(c.fs.writeFile('secret-link', 'overwritten'))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(c.fs.mkdir('out/newdir', { recursive: true }))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(c.fs.list('slash'))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(c.fs.remove('out/secret'))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(c.fs.glob('*', { cwd: 'out' }))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(c.fs.grep('secret', { path: 'out' }))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(c.exec('pwd', { cwd: 'out' }))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(readFileSync(join(sd.outside, 'secret'), 'utf8')).toBe('top secret');
    expect(existsSync(join(sd.outside, 'planted'))).toBe(false);
    expect(existsSync(join(sd.outside, 'newdir'))).toBe(false);
    // The links themselves are ordinary entries: stat sees them, remove deletes the link only.
    expect((await c.fs.stat('out')).type).toBe('symlink');
    await c.fs.remove('out');
    expect(existsSync(join(sd.outside, 'secret'))).toBe(true);
  });

  it('follows symlinks that stay inside the root', async () => {
    await c.fs.writeFile('real/target.txt', 'inside');
    symlinkSync(join(sd.root, 'real'), join(sd.root, 'alias'));
    expect((await c.fs.readFile('alias/target.txt')).toString()).toBe('inside');
    await c.fs.writeFile('alias/new.txt', 'via link');
    expect(readFileSync(join(sd.root, 'real/new.txt'), 'utf8')).toBe('via link');
  });

  it('with noSymlinks, follows no symlink at all, even one that stays inside the root', async () => {
    await c.fs.writeFile('kept/lint/keep.txt', 'keep');
    symlinkSync('kept', join(sd.root, 'planted'));
    symlinkSync('keep.txt', join(sd.root, 'kept/lint/final'));
    const no = { noSymlinks: true } as const;
    expect(await codeOf(c.fs.remove('planted/lint', { recursive: true, ...no }))).toBe('FORBIDDEN');
    expect(await codeOf(c.fs.writeFile('planted/lint/SKILL.md', 'x', no))).toBe('FORBIDDEN');
    expect(await codeOf(c.fs.mkdir('planted/new', { recursive: true, ...no }))).toBe('FORBIDDEN');
    expect(await codeOf(c.fs.writeFile('kept/lint/final', 'x', no))).toBe('FORBIDDEN');
    expect(readFileSync(join(sd.root, 'kept/lint/keep.txt'), 'utf8')).toBe('keep');
    expect(existsSync(join(sd.root, 'kept/lint/SKILL.md'))).toBe(false);
    // A link named by remove itself is removed, not followed; without links the writes work.
    await c.fs.remove('kept/lint/final', no);
    expect(readFileSync(join(sd.root, 'kept/lint/keep.txt'), 'utf8')).toBe('keep');
    await c.fs.writeFile('fresh/dir/file.txt', 'ok', no);
    expect(readFileSync(join(sd.root, 'fresh/dir/file.txt'), 'utf8')).toBe('ok');
    expect(c.info.noSymlinks).toBe(true);
  });
});

describe('readWithStat (one round trip for the read tool)', () => {
  it('answers the stat of what it opened with the bytes; a directory or a file over maxBytes with the stat alone', async () => {
    await c.fs.writeFile('rws/ten.txt', '0123456789');
    const read = await c.fs.readWithStat('rws/ten.txt');
    expect(read.stat).toMatchObject({ path: `${sd.root}/rws/ten.txt`, type: 'file', size: 10, mode: 0o644 });
    expect(read.data?.toString()).toBe('0123456789');
    const over = await c.fs.readWithStat('rws/ten.txt', { maxBytes: 9 });
    expect([over.stat.type, over.stat.size, over.data]).toEqual(['file', 10, undefined]);
    const dir = await c.fs.readWithStat('rws');
    expect([dir.stat.path, dir.stat.type, dir.stat.size, dir.data]).toEqual([
      `${sd.root}/rws`,
      'directory',
      0,
      undefined,
    ]);
  });

  it('follows a symlink only inside the root, and refuses what is not a file or a directory', async () => {
    await c.fs.writeFile('rws/target.txt', 'inside');
    writeFileSync(join(sd.outside, 'secret'), 'top secret');
    symlinkSync(join(sd.root, 'rws/target.txt'), join(sd.root, 'rws/alias'));
    symlinkSync(join(sd.outside, 'secret'), join(sd.root, 'rws/away'));
    const alias = await c.fs.readWithStat('rws/alias');
    expect([alias.stat.path, alias.stat.type, alias.data?.toString()]).toEqual([
      `${sd.root}/rws/alias`,
      'file',
      'inside',
    ]);
    expect(await codeOf(c.fs.readWithStat('rws/away'))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(c.fs.readWithStat('../outside/secret'))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(spawnSync('mkfifo', [join(sd.root, 'rws/fifo')]).status).toBe(0);
    expect(await codeOf(c.fs.readWithStat('rws/fifo'))).toBe('NOT_A_FILE');
    expect(await codeOf(c.fs.readWithStat('rws/missing'))).toBe('FILE_NOT_FOUND');
  });
});

describe('readRange (streamed downloads)', () => {
  const TEN = '0123456789';
  beforeAll(async () => {
    await c.fs.writeFile('rr/ten.txt', TEN);
  });
  const range = async (path: string, offset: number, length: number) => {
    const { data, size } = await c.fs.readRange(path, offset, length);
    return [data.toString(), size];
  };

  it('answers a piece and the file size; past the end of the file, nothing', async () => {
    expect(await range('rr/ten.txt', 3, 4)).toEqual(['3456', 10]);
    expect(await range('rr/ten.txt', 8, 100)).toEqual(['89', 10]);
    expect(await range('rr/ten.txt', 0, 0)).toEqual(['', 10]);
    expect(await range('rr/ten.txt', 10, 5)).toEqual(['', 10]);
    expect(await range('rr/ten.txt', Number.MAX_SAFE_INTEGER, MAX_BINARY_BYTES)).toEqual(['', 10]);
  });

  it('is not bound by the model-facing read limit', async () => {
    const small = await sd.connect({ maxReadBytes: 4 });
    try {
      expect(await codeOf(small.fs.readFile('rr/ten.txt'))).toBe('FILE_TOO_LARGE');
      expect((await small.fs.readRange('rr/ten.txt', 0, 10)).data.toString()).toBe(TEN);
    } finally {
      small.close();
      c = await sd.connect();
    }
  });

  it('is confined as readFile is: a symlink is followed only while it stays inside the root', async () => {
    writeFileSync(join(sd.outside, 'rr-secret'), 'top secret');
    symlinkSync(join(sd.outside, 'rr-secret'), join(sd.root, 'rr/out-link'));
    symlinkSync(sd.outside, join(sd.root, 'rr/out-dir'));
    symlinkSync('ten.txt', join(sd.root, 'rr/in-link'));
    expect(await codeOf(c.fs.readRange('rr/out-link', 0, 10))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(c.fs.readRange('rr/out-dir/rr-secret', 0, 10))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(c.fs.readRange('../outside/rr-secret', 0, 10))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await range('rr/in-link', 0, 3)).toEqual(['012', 10]);
    expect(await codeOf(c.fs.readRange('rr', 0, 1))).toBe('NOT_A_FILE');
    expect(await codeOf(c.fs.readRange('rr/nope', 0, 1))).toBe('FILE_NOT_FOUND');
    expect(spawnSync('mkfifo', [join(sd.root, 'rr/fifo')]).status).toBe(0);
    expect(await codeOf(c.fs.readRange('rr/fifo', 0, 1))).toBe('NOT_A_FILE'); // and did not block
  });

  const badRanges: Array<[offset: unknown, length: unknown]> = [
    [-1, 1],
    [0, -1],
    [0.5, 1],
    [0, 1.5],
    [0, MAX_BINARY_BYTES + 1],
    [Number.MAX_SAFE_INTEGER + 2, 1],
    [Number.NaN, 1],
    [0, Number.POSITIVE_INFINITY],
  ];

  it('refuses negative, fractional and over-frame offsets and lengths before sending them', async () => {
    for (const [offset, length] of badRanges)
      expect(
        await codeOf(c.fs.readRange('rr/ten.txt', offset as number, length as number)),
        `${offset}, ${length}`,
      ).toBe('INVALID_ARGUMENTS');
  });

  it('refuses them in sandboxd too, from a host that skipped its own checks', async () => {
    c.close();
    const raw = await openConnection({
      input: sd.child.stdout,
      output: sd.child.stdin,
      root: sd.root,
      helloTimeoutMs: 15_000,
    });
    try {
      const path = join(sd.root, 'rr/ten.txt');
      for (const [offset, length] of [...badRanges, [0, undefined], ['0', 1], [0, '1'], [null, 1]]) {
        const call = raw.call('readRange', { path, offset, length }, { timeoutMs: 5000 });
        expect(await codeOf(call), `${offset}, ${length}`).toBe('INVALID_ARGUMENTS');
      }
      expect(await raw.call('readRange', { path, offset: 1, length: 2 }, { timeoutMs: 5000 })).toEqual({
        data: Buffer.from('12').toString('base64'),
        size: 10,
      });
    } finally {
      raw.close();
      c = await sd.connect();
    }
  });
});
