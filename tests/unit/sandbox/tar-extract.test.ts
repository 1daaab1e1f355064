// Archive uploads are all or nothing (tar-extract.ts), and names are bytes both ways (tar.ts,
// tar-pack.ts). Run on the memory provider's files, with a wrapper that fails one step to prove the
// rollback.
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createMemoryFs } from '../../../host/sandbox/memory/fs.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/index.ts';
import { receiveUpload } from '../../../host/sandbox/tar.ts';
import { extractEntries } from '../../../host/sandbox/tar-extract.ts';
import { packEntries } from '../../../host/sandbox/tar-pack.ts';
import { fromBytes } from '../../../sandbox-wire/byte-names.ts';
import { codeOf, makeTar } from '../../contract/sandbox/suite.ts';

const collect = async (s: AsyncIterable<Buffer>): Promise<Buffer> => {
  const parts: Buffer[] = [];
  for await (const c of s) parts.push(c);
  return Buffer.concat(parts);
};

/** Every file and directory under the root with its content, to compare before and after. */
const snapshot = async (fs: ReturnType<typeof createMemoryFs>): Promise<Record<string, string>> => {
  const out: Record<string, string> = {};
  const walk = async (dir: string): Promise<void> => {
    for (const e of await fs.list(dir)) {
      const p = `${dir}/${e.name}`;
      if (e.type === 'directory') {
        out[p] = '<dir>';
        await walk(p);
      } else out[p] = (await fs.readFile(p)).toString();
    }
  };
  await walk(fs.root);
  return out;
};

describe('archive uploads are all or nothing', () => {
  it('an entry refused midway (NOT_A_DIRECTORY) leaves no file written before it', async () => {
    const sb = await createMemoryProvider().create({ tenantId: 't', agentId: 'a' });
    await sb.fs.writeFile('up/old.txt', 'old');
    await sb.fs.writeFile('up/x', 'a file where a directory must go');
    const before = await snapshot(sb.fs as never);
    const tar = await makeTar([
      { name: 'old.txt', body: 'new' },
      { name: 'first.txt', body: 'first' },
      { name: 'x/y.txt', body: 'y' },
    ]);
    expect(await codeOf(sb.archive.upload('up', tar))).toBe('NOT_A_DIRECTORY');
    expect(await snapshot(sb.fs as never)).toEqual(before);
  });

  it('an archive at odds with itself (a file, then a path through it) writes nothing', async () => {
    const sb = await createMemoryProvider().create({ tenantId: 't', agentId: 'a' });
    const tar = await makeTar([
      { name: 'a.txt', body: 'a' },
      { name: 'f', body: 'file' },
      { name: 'f/g', body: 'through a file' },
    ]);
    expect(await codeOf(sb.archive.upload('fresh', tar))).toBe('NOT_A_DIRECTORY');
    expect(await sb.fs.exists('fresh')).toBe(false);
  });

  it('a failure while moving files into place puts back every file it replaced and removes every one it added', async () => {
    const fs = createMemoryFs();
    await fs.writeFile('t/keep.txt', 'original');
    await fs.writeFile('t/d/deep.txt', 'original deep');
    const before = await snapshot(fs);
    let renames = 0;
    const failing = {
      ...fs,
      resolve: fs.resolve,
      rename: async (from: string, to: string) => {
        if (++renames === 5)
          throw Object.assign(new Error('engine went away'), { code: 'SANDBOX_UNAVAILABLE' });
        return fs.rename(from, to);
      },
    };
    const tar = await makeTar([
      { name: 'keep.txt', body: 'replaced' },
      { name: 'new/dir/n.txt', body: 'new' },
      { name: 'd/deep.txt', body: 'replaced deep' },
    ]);
    await expect(
      receiveUpload(tar, {}, (entries, plan) =>
        extractEntries(failing, fs.resolve('t'), plan, entries, async (target, content, mode) =>
          fs.writeFile(target, await collect(content), { mode }),
        ),
      ),
    ).rejects.toThrow(/engine went away/);
    expect(renames).toBeGreaterThan(5); // the failing one, then the undoing ones
    expect(await snapshot(fs)).toEqual(before);
  });

  it('a successful upload replaces, adds and leaves no stage behind', async () => {
    const sb = await createMemoryProvider().create({ tenantId: 't', agentId: 'a' });
    await sb.fs.writeFile('ok/keep.txt', 'old');
    const tar = await makeTar([
      { name: 'keep.txt', body: 'new' },
      { name: 'sub/', type: 'directory' },
      { name: 'sub/n.txt', body: 'n' },
    ]);
    expect(await sb.archive.upload('ok', tar)).toEqual({ files: 2, bytes: 4 });
    expect(await snapshot(sb.fs as never)).toEqual({
      '/workspace/ok': '<dir>',
      '/workspace/ok/keep.txt': 'new',
      '/workspace/ok/sub': '<dir>',
      '/workspace/ok/sub/n.txt': 'n',
    });
  });
});

describe('archive names are bytes', () => {
  const raw = fromBytes(Buffer.from([0x62, 0x61, 0x64, 0xff, 0xfe, 0x2e, 0x74, 0x78, 0x74])); // bad\xff\xfe.txt

  it('a name that is not UTF-8 survives a download and an upload byte for byte, short or long', async () => {
    const long = `${'d'.repeat(120)}/${'e'.repeat(90)}${raw}`;
    const tar = await collect(
      packEntries([
        {
          name: raw,
          type: 'file',
          mode: 0o644,
          size: 1,
          content: async function* () {
            yield Buffer.from('1');
          },
        },
        {
          name: long,
          type: 'file',
          mode: 0o644,
          size: 1,
          content: async function* () {
            yield Buffer.from('2');
          },
        },
      ]),
    );
    // The ustar name field holds the raw bytes.
    expect(tar.subarray(0, 9).toString('hex')).toBe('626164fffe2e747874');
    const names = await receiveUpload(Readable.from([tar]), {}, async (_entries, plan) =>
      plan.map((p) => p.name),
    );
    expect(names).toEqual([raw, long]);
  });

  it('a valid UTF-8 name is read as UTF-8 from ustar and from PAX', async () => {
    const long = `${'ü'.repeat(80)}/ä.txt`;
    const tar = await makeTar([
      { name: 'é.txt', body: 'x' },
      { name: long, body: 'y' },
    ]);
    const names = await receiveUpload(tar, {}, async (_e, plan) => plan.map((p) => p.name));
    expect(names).toEqual(['é.txt', long]);
  });
});
