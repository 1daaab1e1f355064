// The one contract every SandboxProvider passes. Each provider runs it with a one-line test:
//   runSandboxContract('memory', async () => ({ provider: createMemoryProvider() }));
// Shell-dependent parts (exec, jobs) run only where the provider declares real isolation
// (flags.isolated): a provider without a shell must not pretend to have one.

import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { nanoid } from 'nanoid';
import { pack } from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxError } from '../../../host/errors.ts';
import { collect } from '../../../host/sandbox/chunks.ts';
import type { Sandbox, SandboxProvider } from '../../../host/sandbox/types.ts';

export interface ContractTarget {
  provider: SandboxProvider;
  /** Called after the suite, after every sandbox it made was destroyed. */
  cleanup?: () => Promise<void>;
}

/** The code of a rejection (undefined when the promise resolved). */
export const codeOf = async (p: Promise<unknown>): Promise<string | undefined> => {
  try {
    await p;
  } catch (e) {
    return (e as { code?: string }).code ?? `not a SandboxError: ${(e as Error)?.message ?? e}`;
  }
  return undefined;
};

type TarEntry = {
  name: string;
  type?: 'file' | 'directory' | 'symlink' | 'link' | 'fifo';
  body?: string | Buffer;
  linkname?: string;
};

/** Build an (optionally hostile) tar in memory. */
export const makeTar = async (entries: TarEntry[]): Promise<Readable> => {
  const p = pack();
  // Entries are queued without waiting: a large body only drains once the stream is read.
  for (const e of entries) {
    const header = {
      name: e.name,
      type: e.type ?? 'file',
      mode: e.type === 'directory' ? 0o755 : 0o644,
      ...(e.linkname ? { linkname: e.linkname } : {}),
    };
    if ((e.type ?? 'file') === 'file') p.entry(header, e.body ?? '');
    else p.entry(header);
  }
  p.finalize();
  return Readable.from(p);
};

/** Names and contents of a tar stream (files only) plus directory names. */
export const readTar = async (stream: Readable): Promise<Record<string, string>> => {
  const { extract } = await import('tar-stream');
  const ex = extract();
  stream.pipe(ex);
  const out: Record<string, string> = {};
  for await (const entry of ex) {
    const body = await text(entry as unknown as Readable);
    out[entry.header.name.replace(/\/$/, '')] = entry.header.type === 'directory' ? '<dir>' : body;
  }
  return out;
};

export const runSandboxContract = (name: string, setup: () => Promise<ContractTarget>): void => {
  describe(`SandboxProvider contract: ${name}`, () => {
    let target: ContractTarget;
    let sb: Sandbox;
    const agents: string[] = [];
    const newAgent = (): string => {
      const id = `contract-${nanoid(8)}`;
      agents.push(id);
      return id;
    };

    beforeAll(async () => {
      target = await setup();
      sb = await target.provider.create({ tenantId: 'contract', agentId: newAgent() });
    });
    afterAll(async () => {
      if (!target) return;
      for (const id of agents) await target.provider.destroy(id).catch(() => {});
      await target.provider.close();
      await target.cleanup?.();
    });

    describe('files', () => {
      it('writes and reads back text and binary, creating parent directories', async () => {
        await sb.fs.writeFile('notes/a/b.txt', 'hello\nworld\n');
        expect((await sb.fs.readFile('notes/a/b.txt')).toString()).toBe('hello\nworld\n');
        const bin = Buffer.from([0, 1, 2, 255, 254, 10, 0]);
        await sb.fs.writeFile(`${sb.fs.root}/bin.dat`, bin);
        expect(Buffer.compare(await sb.fs.readFile('bin.dat'), bin)).toBe(0);
        await sb.fs.writeFile('notes/a/b.txt', 'replaced');
        expect((await sb.fs.readFile('notes/a/b.txt')).toString()).toBe('replaced');
      });
      it('reads a byte range with offset and length', async () => {
        await sb.fs.writeFile('range.txt', '0123456789');
        expect((await sb.fs.readFile('range.txt', { offset: 3, length: 4 })).toString()).toBe('3456');
        expect((await sb.fs.readFile('range.txt', { offset: 8 })).toString()).toBe('89');
      });
      it('stats files and directories with normalised paths', async () => {
        await sb.fs.writeFile('st/f.txt', 'abc', { mode: 0o600 });
        const f = await sb.fs.stat('./st//x/../f.txt');
        expect(f).toMatchObject({ path: `${sb.fs.root}/st/f.txt`, type: 'file', size: 3 });
        expect(f.mode & 0o777).toBe(0o600);
        expect(f.mtimeMs).toBeGreaterThan(0);
        expect((await sb.fs.stat('st')).type).toBe('directory');
        expect(await sb.fs.exists('st/f.txt')).toBe(true);
        expect(await sb.fs.exists('st/missing')).toBe(false);
      });
      it('lists a directory sorted by name with types and sizes', async () => {
        await sb.fs.mkdir('ls/sub', { recursive: true });
        await sb.fs.writeFile('ls/b.txt', '12');
        await sb.fs.writeFile('ls/a.txt', '1');
        const entries = await sb.fs.list('ls');
        expect(entries.map((e) => [e.name, e.type])).toEqual([
          ['a.txt', 'file'],
          ['b.txt', 'file'],
          ['sub', 'directory'],
        ]);
        expect(entries[1]?.size).toBe(2);
      });
      it('creates directories, recursively and idempotently', async () => {
        await sb.fs.mkdir('mk/x/y/z', { recursive: true });
        await sb.fs.mkdir('mk/x/y/z', { recursive: true });
        await sb.fs.mkdir('mk/x/single');
        expect((await sb.fs.stat('mk/x/single')).type).toBe('directory');
        expect(await codeOf(sb.fs.mkdir('mk/nope/deeper'))).toBe('FILE_NOT_FOUND');
      });
      it('removes files, and directories only when asked to recurse', async () => {
        await sb.fs.writeFile('rm/d/f.txt', 'x');
        await sb.fs.writeFile('rm/g.txt', 'x');
        await sb.fs.remove('rm/g.txt');
        expect(await sb.fs.exists('rm/g.txt')).toBe(false);
        expect(await codeOf(sb.fs.remove('rm/d'))).toBe('DIRECTORY_NOT_EMPTY');
        await sb.fs.remove('rm', { recursive: true });
        expect(await sb.fs.exists('rm')).toBe(false);
        expect(await codeOf(sb.fs.remove('rm'))).toBe('FILE_NOT_FOUND');
      });
      it('renames files and directories', async () => {
        await sb.fs.writeFile('mv/src/f.txt', 'moved');
        await sb.fs.rename('mv/src', 'mv/dst');
        expect((await sb.fs.readFile('mv/dst/f.txt')).toString()).toBe('moved');
        expect(await sb.fs.exists('mv/src')).toBe(false);
        await sb.fs.rename('mv/dst/f.txt', 'mv/g.txt');
        expect((await sb.fs.readFile('mv/g.txt')).toString()).toBe('moved');
      });
      it('readWithStat answers the stat with the bytes; a directory or a file over maxBytes with the stat alone', async () => {
        await sb.fs.writeFile('rws/five.txt', '12345');
        const read = await sb.fs.readWithStat('rws/five.txt');
        expect(read.stat).toMatchObject({ path: sb.fs.resolve('rws/five.txt'), type: 'file', size: 5 });
        expect(read.data?.toString()).toBe('12345');
        expect((await sb.fs.readWithStat('rws/five.txt', { offset: 1, length: 2 })).data?.toString()).toBe(
          '23',
        );
        expect((await sb.fs.readWithStat('rws/five.txt', { maxBytes: 5 })).data?.toString()).toBe('12345');
        const over = await sb.fs.readWithStat('rws/five.txt', { maxBytes: 4 });
        expect([over.stat.size, over.data]).toEqual([5, undefined]);
        const dir = await sb.fs.readWithStat('rws');
        expect([dir.stat.path, dir.stat.type, dir.data]).toEqual([
          sb.fs.resolve('rws'),
          'directory',
          undefined,
        ]);
        expect(await codeOf(sb.fs.readWithStat('rws/missing.txt'))).toBe('FILE_NOT_FOUND');
        expect(await codeOf(sb.fs.readWithStat('../x'))).toBe('PATH_OUTSIDE_WORKSPACE');
      });
      it('fails with stable codes', async () => {
        expect(await codeOf(sb.fs.readFile('missing.txt'))).toBe('FILE_NOT_FOUND');
        expect(await codeOf(sb.fs.stat('missing.txt'))).toBe('FILE_NOT_FOUND');
        await sb.fs.mkdir('errs', { recursive: true });
        await sb.fs.writeFile('errs/file', 'x');
        expect(await codeOf(sb.fs.readFile('errs'))).toBe('NOT_A_FILE');
        expect(await codeOf(sb.fs.list('errs/file'))).toBe('NOT_A_DIRECTORY');
        expect(await codeOf(sb.fs.writeFile('errs/file/under', 'x'))).toBe('NOT_A_DIRECTORY');
      });
    });

    describe('confinement', () => {
      const escapes = ['../x', '/etc/passwd', 'a/../../x', '/', '/workspace-evil/x'];
      it('refuses every path that leaves the workspace, in every operation', async () => {
        for (const p of escapes) {
          expect(() => sb.fs.resolve(p), p).toThrow(
            expect.objectContaining({ code: 'PATH_OUTSIDE_WORKSPACE' }),
          );
          expect(await codeOf(sb.fs.readFile(p)), p).toBe('PATH_OUTSIDE_WORKSPACE');
          expect(await codeOf(sb.fs.writeFile(p, 'x')), p).toBe('PATH_OUTSIDE_WORKSPACE');
          expect(await codeOf(sb.fs.stat(p)), p).toBe('PATH_OUTSIDE_WORKSPACE');
          expect(await codeOf(sb.fs.list(p)), p).toBe('PATH_OUTSIDE_WORKSPACE');
          expect(await codeOf(sb.fs.mkdir(p)), p).toBe('PATH_OUTSIDE_WORKSPACE');
          expect(await codeOf(sb.fs.remove(p, { recursive: true })), p).toBe('PATH_OUTSIDE_WORKSPACE');
          expect(await codeOf(sb.fs.rename('x', p)), p).toBe('PATH_OUTSIDE_WORKSPACE');
          expect(await codeOf(sb.fs.grep('x', { path: p })), p).toBe('PATH_OUTSIDE_WORKSPACE');
          expect(await codeOf(sb.fs.glob('*', { cwd: p })), p).toBe('PATH_OUTSIDE_WORKSPACE');
          expect(await codeOf(sb.archive.download(p)), p).toBe('PATH_OUTSIDE_WORKSPACE');
          expect(await codeOf(sb.archive.downloadFile(p)), p).toBe('PATH_OUTSIDE_WORKSPACE');
          expect(await codeOf(sb.archive.upload(p, await makeTar([{ name: 'a', body: 'x' }]))), p).toBe(
            'PATH_OUTSIDE_WORKSPACE',
          );
        }
      });
    });

    describe('glob and grep', () => {
      beforeAll(async () => {
        await sb.fs.writeFile('repo/README.md', '# Title\nTODO: write docs\n');
        await sb.fs.writeFile('repo/src/index.ts', 'export const a = 1;\n// todo lower\n');
        await sb.fs.writeFile('repo/src/lib/util.ts', 'export function util() {}\n// TODO: test\n');
        await sb.fs.writeFile('repo/src/lib/util.js', '// TODO js\n');
        await sb.fs.mkdir('repo/empty', { recursive: true });
      });
      it('globs files with ** across directories, sorted and absolute', async () => {
        const r = await sb.fs.glob('**/*.ts', { cwd: 'repo' });
        expect(r).toEqual({
          paths: [`${sb.fs.root}/repo/src/index.ts`, `${sb.fs.root}/repo/src/lib/util.ts`],
          truncated: false,
        });
        expect((await sb.fs.glob('*.md', { cwd: 'repo' })).paths).toEqual([`${sb.fs.root}/repo/README.md`]);
        expect((await sb.fs.glob('repo/src/*')).paths).toEqual([`${sb.fs.root}/repo/src/index.ts`]);
        expect((await sb.fs.glob('**', { cwd: 'repo' })).paths).toHaveLength(4);
      });
      it('truncates globs at the limit', async () => {
        const r = await sb.fs.glob('**/*', { cwd: 'repo', limit: 2 });
        expect(r.paths).toHaveLength(2);
        expect(r.truncated).toBe(true);
      });
      it('greps with regular expressions, case, include and limit', async () => {
        const r = await sb.fs.grep('TODO', { path: 'repo' });
        expect(r.matches).toEqual([
          { path: `${sb.fs.root}/repo/README.md`, line: 2, text: 'TODO: write docs' },
          { path: `${sb.fs.root}/repo/src/lib/util.js`, line: 1, text: '// TODO js' },
          { path: `${sb.fs.root}/repo/src/lib/util.ts`, line: 2, text: '// TODO: test' },
        ]);
        expect(r.truncated).toBe(false);
        const ci = await sb.fs.grep('todo', { path: 'repo', ignoreCase: true, include: '*.ts' });
        expect(ci.matches.map((m) => [m.path.slice(sb.fs.root.length), m.line])).toEqual([
          ['/repo/src/index.ts', 2],
          ['/repo/src/lib/util.ts', 2],
        ]);
        expect((await sb.fs.grep('export (const|function)', { path: 'repo/src' })).matches).toHaveLength(2);
        const one = await sb.fs.grep('TODO', { path: 'repo', limit: 1 });
        expect(one.matches).toHaveLength(1);
        expect(one.truncated).toBe(true);
        expect((await sb.fs.grep('util', { path: 'repo/src/lib/util.ts' })).matches).toEqual([
          { path: `${sb.fs.root}/repo/src/lib/util.ts`, line: 1, text: 'export function util() {}' },
        ]);
      });
    });

    describe('grep skipIgnored', () => {
      it('skips hidden files and what .gitignore and .ignore exclude, as ripgrep does; a named path is searched', async () => {
        const files: Record<string, string> = {
          'ig/.gitignore': '# deps\nnode_modules/\n*.log\n/build\n!keep.log\n',
          'ig/src/a.ts': 'needle\n',
          'ig/src/.hidden.ts': 'needle\n',
          'ig/.cache/x.ts': 'needle\n',
          'ig/node_modules/pkg/index.js': 'needle\n',
          'ig/src/node_modules/deep.js': 'needle\n',
          'ig/debug.log': 'needle\n',
          'ig/keep.log': 'needle\n',
          'ig/build/out.js': 'needle\n',
          'ig/src/build/kept.js': 'needle\n',
          'ig/src/.ignore': 'generated.ts\n',
          'ig/src/generated.ts': 'needle\n',
        };
        for (const [path, body] of Object.entries(files)) await sb.fs.writeFile(path, body);
        const found = async (path: string, skipIgnored: boolean) =>
          (await sb.fs.grep('needle', { path, skipIgnored })).matches.map((m) =>
            m.path.slice(`${sb.fs.root}/`.length),
          );
        expect(await found('ig', true)).toEqual(['ig/keep.log', 'ig/src/a.ts', 'ig/src/build/kept.js']);
        expect(await found('ig', false)).toHaveLength(10);
        expect(await found('ig/node_modules/pkg', true)).toEqual(['ig/node_modules/pkg/index.js']);
        expect(await found('ig/.cache', true)).toEqual(['ig/.cache/x.ts']);
      });
    });

    describe('archive', () => {
      it('round-trips a directory through download and upload', async () => {
        await sb.fs.writeFile('arc/src/a.txt', 'A');
        await sb.fs.writeFile('arc/src/deep/b.txt', 'BB');
        const contents = await readTar(await sb.archive.download('arc/src'));
        expect(contents).toEqual({ 'a.txt': 'A', deep: '<dir>', 'deep/b.txt': 'BB' });
        const res = await sb.archive.upload('arc/copy', await sb.archive.download('arc/src'));
        expect(res).toEqual({ files: 2, bytes: 3 });
        expect((await sb.fs.readFile('arc/copy/deep/b.txt')).toString()).toBe('BB');
      });
      it('downloads a single file', async () => {
        await sb.fs.writeFile('arc/one.txt', 'single');
        expect(await readTar(await sb.archive.download('arc/one.txt'))).toEqual({ 'one.txt': 'single' });
      });
      it('downloads one file as raw bytes, with its size up front', async () => {
        const bin = Buffer.from([0, 1, 2, 253, 254, 255]);
        await sb.fs.writeFile('raw/bin.dat', bin);
        const file = await sb.archive.downloadFile('raw/bin.dat');
        expect([file.path, file.size]).toEqual([`${sb.fs.root}/raw/bin.dat`, bin.length]);
        expect(await collect(file.content)).toEqual(bin);
        await sb.fs.writeFile('raw/empty', '');
        expect(await collect((await sb.archive.downloadFile('raw/empty')).content)).toEqual(Buffer.alloc(0));
        expect(await codeOf(sb.archive.downloadFile('raw'))).toBe('NOT_A_FILE');
        expect(await codeOf(sb.archive.downloadFile('raw/missing'))).toBe('FILE_NOT_FOUND');
      });
      const hostile: Array<[string, TarEntry[]]> = [
        [
          'parent traversal',
          [
            { name: 'ok.txt', body: 'x' },
            { name: '../escape.txt', body: 'x' },
          ],
        ],
        ['nested traversal', [{ name: 'a/../../escape.txt', body: 'x' }]],
        ['absolute path', [{ name: '/etc/escape.txt', body: 'x' }]],
        [
          'symlink',
          [
            { name: 'link', type: 'symlink', linkname: '/etc' },
            { name: 'link/passwd', body: 'x' },
          ],
        ],
        [
          'symlink to parent (tar-fs invalid.tar)',
          [
            { name: 'foo', type: 'symlink', linkname: '../' },
            { name: 'foo/bar', body: 'x' },
          ],
        ],
        [
          'hardlink',
          [
            { name: 'd/', type: 'directory' },
            { name: 'd/x', type: 'link', linkname: '../secret.txt' },
          ],
        ],
        ['fifo', [{ name: 'pipe', type: 'fifo' }]],
      ];
      for (const [what, entries] of hostile) {
        it(`rejects a hostile upload (${what}) and writes nothing`, async () => {
          const dir = `hostile-${nanoid(6)}`;
          expect(await codeOf(sb.archive.upload(dir, await makeTar(entries)))).toBe('ARCHIVE_REJECTED');
          expect(await sb.fs.exists(dir)).toBe(false);
          expect(await sb.fs.exists('escape.txt')).toBe(false);
        });
      }
      it('uploads a single file from a stream, replacing the old one only when complete', async () => {
        async function* parts(...chunks: string[]) {
          for (const c of chunks) yield Buffer.from(c);
        }
        async function* cut() {
          yield Buffer.from('partial');
          throw new SandboxError('BAD_REQUEST', 'The client went away.');
        }
        expect(await sb.archive.uploadFile('up1/one.txt', parts('he', 'll', 'o'))).toEqual({
          path: `${sb.fs.root}/up1/one.txt`,
          bytes: 5,
        });
        expect(
          await codeOf(sb.archive.uploadFile('up1/one.txt', parts('x'.repeat(100)), { maxBytes: 10 })),
        ).toBe('FILE_TOO_LARGE');
        expect(await codeOf(sb.archive.uploadFile('up1/one.txt', cut()))).toBe('BAD_REQUEST');
        expect((await sb.fs.readFile('up1/one.txt')).toString()).toBe('hello');
        expect((await sb.fs.list('up1')).map((e) => e.name)).toEqual(['one.txt']);
        expect(await codeOf(sb.archive.uploadFile('../x', parts('x')))).toBe('PATH_OUTSIDE_WORKSPACE');
      });
      it('enforces the upload size limit', async () => {
        const tar = await makeTar([{ name: 'big.txt', body: 'x'.repeat(4096) }]);
        expect(await codeOf(sb.archive.upload('toobig', tar, { maxBytes: 1024 }))).toBe('FILE_TOO_LARGE');
        expect(await sb.fs.exists('toobig/big.txt')).toBe(false);
      });
    });

    describe('provider', () => {
      it('creates one sandbox per agent, finds it again, and destroys it', async () => {
        const agentId = newAgent();
        expect(await target.provider.get(agentId)).toBeUndefined();
        const a = await target.provider.create({ tenantId: 'contract', agentId });
        await a.fs.writeFile('mine.txt', 'kept');
        await a.detach();
        const again = await target.provider.get(agentId);
        expect(again?.id).toBe(a.id);
        expect((await again?.fs.readFile('mine.txt'))?.toString()).toBe('kept');
        await target.provider.destroy(agentId);
        expect(await target.provider.get(agentId)).toBeUndefined();
      });
      it('keeps agents apart', async () => {
        const other = await target.provider.create({ tenantId: 'contract', agentId: newAgent() });
        await sb.fs.writeFile('private.txt', 'mine');
        expect(await other.fs.exists('private.txt')).toBe(false);
      });
    });

    describe('exec and jobs (isolated providers only)', () => {
      it('declares its capabilities as data', () => {
        const f = target.provider.flags;
        expect(typeof f.isolated).toBe('boolean');
        expect(typeof f.durableJobs).toBe('boolean');
      });
      const shell = (): boolean => target.provider.flags.isolated;
      it('runs a command with cwd, env and stdin and reports its exit code', async (ctx) => {
        if (!shell()) ctx.skip();
        await sb.fs.mkdir('work', { recursive: true });
        const chunks: string[] = [];
        const r = await sb.exec('pwd; echo "$GREETING"; cat; echo oops >&2; exit 3', {
          cwd: 'work',
          env: { GREETING: 'hi' },
          stdin: 'from-stdin\n',
          onStdout: (c) => chunks.push(c.toString()),
        });
        expect(r).toMatchObject({
          exitCode: 3,
          stdout: `${sb.fs.root}/work\nhi\nfrom-stdin\n`,
          stderr: 'oops\n',
          timedOut: false,
          truncated: false,
        });
        expect(chunks.join('')).toBe(r.stdout);
        expect(await codeOf(sb.exec('true', { cwd: '../..' }))).toBe('PATH_OUTSIDE_WORKSPACE');
      });
      it('sees files written through fs, and fs sees files written by commands', async (ctx) => {
        if (!shell()) ctx.skip();
        await sb.fs.writeFile('shared.txt', 'from fs');
        const r = await sb.exec('cat shared.txt; printf made > made.txt');
        expect(r.stdout).toBe('from fs');
        expect((await sb.fs.readFile('made.txt')).toString()).toBe('made');
      });
      it('times out and kills the command', async (ctx) => {
        if (!shell()) ctx.skip();
        const r = await sb.exec('sleep 30', { timeoutMs: 500 }); // not killed, it would say exit 0
        expect(r.timedOut).toBe(true);
        expect(r.exitCode).toBeNull();
      });
      it('runs background jobs whose output can be read incrementally, and kills them', async (ctx) => {
        if (!shell()) ctx.skip();
        const job = await sb.jobs.start('echo first; sleep 0.3; echo second');
        expect(job.status).toBe('running');
        const done = await sb.jobs.output(job.id, { wait: true, timeoutMs: 10_000 });
        expect(done).toMatchObject({ status: 'exited', exitCode: 0, output: 'first\nsecond\n' });
        const tail = await sb.jobs.output(job.id, { offset: 'first\n'.length });
        expect(tail.output).toBe('second\n');
        const long = await sb.jobs.start('sleep 60');
        expect((await sb.jobs.kill(long.id)).status).toBe('killed');
        expect((await sb.jobs.list()).map((j) => j.id)).toEqual(expect.arrayContaining([job.id, long.id]));
        expect(await codeOf(sb.jobs.output('no-such-job'))).toBe('JOB_NOT_FOUND');
      });
      it("kills a job asked to die the moment it started (before it has become the agent's)", async (ctx) => {
        if (!shell()) ctx.skip();
        const killed = await Promise.all(
          Array.from(
            { length: 32 },
            async () => (await sb.jobs.kill((await sb.jobs.start('sleep 60')).id)).status,
          ),
        );
        expect(killed).toEqual(Array(32).fill('killed'));
      });
    });
  });
};
