// Upload validation on the host: the hostile-archive corpus of security.md §3.6, including names
// that arrive through PAX and GNU long-name records rather than the plain header; and the spool
// that holds an upload while it is checked (private, bounded, always removed).

import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pack } from 'tar-stream';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { SandboxError } from '../../../host/errors.ts';
import { collect } from '../../../host/sandbox/chunks.ts';
import { SPOOL_PREFIX } from '../../../host/sandbox/spool.ts';
import { type ReceiveOptions, receiveUpload } from '../../../host/sandbox/tar.ts';
import { codeOf, makeTar } from '../../contract/sandbox/suite.ts';

const spoolDir = mkdtempSync(join(tmpdir(), 'dsh-spool-test-'));
const spooled = (): string[] => readdirSync(spoolDir);
afterEach(() => {
  expect(spooled(), 'a spool file was left behind').toEqual([]);
});
afterAll(() => rmSync(spoolDir, { recursive: true, force: true }));

let applied = 0;
/** Receives an upload and reads every entry whole (what a writer would get). */
const readUpload = (tar: Readable, limits: ReceiveOptions = {}) =>
  receiveUpload(tar, { spoolDir, ...limits }, async (entries) => {
    applied++;
    const out: { name: string; type: string; mode: number; data?: Buffer }[] = [];
    for await (const e of entries) {
      const data = e.type === 'file' ? await collect(e.content) : undefined;
      out.push({ name: e.name, type: e.type, mode: e.mode, ...(data ? { data } : {}) });
    }
    return out;
  });

/** One file entry's tar blocks without the end-of-archive marker, to repeat. */
const entryBlocks = async (name: string, size: number): Promise<Buffer> => {
  const p = pack();
  p.entry({ name }, Buffer.alloc(size, 1));
  p.finalize();
  const all = await collect(p as unknown as AsyncIterable<Buffer>);
  return all.subarray(0, all.length - 1024);
};

type Raw = Parameters<ReturnType<typeof pack>['entry']>[0] & { body?: Buffer | string };
const rawTar = (entries: Raw[]): Readable => {
  const p = pack();
  for (const { body, ...h } of entries) p.entry(h, body ?? '');
  p.finalize();
  return Readable.from(p);
};

/** A GNU-format tar (typeflag L long-name record, then the entry), built byte by byte as GNU tar does. */
const gnuLongNameTar = (longName: string, body: string): Readable => {
  const header = (name: string, size: number, type: string): Buffer => {
    const h = Buffer.alloc(512);
    h.write(name.slice(0, 99), 0);
    h.write('0000644\0', 100);
    h.write('0001750\0', 108);
    h.write('0001750\0', 116);
    h.write(`${size.toString(8).padStart(11, '0')}\0`, 124);
    h.write('00000000000\0', 136);
    h.write('        ', 148);
    h.write(type, 156);
    h.write('ustar  \0', 257);
    let sum = 0;
    for (const b of h) sum += b;
    h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
    return h;
  };
  const pad = (b: Buffer): Buffer => Buffer.concat([b, Buffer.alloc((512 - (b.length % 512)) % 512)]);
  const nameBuf = Buffer.from(`${longName}\0`);
  return Readable.from([
    Buffer.concat([
      header('././@LongLink', nameBuf.length, 'L'),
      pad(nameBuf),
      header('placeholder', body.length, '0'),
      pad(Buffer.from(body)),
      Buffer.alloc(1024),
    ]),
  ]);
};

describe('receiveUpload: validation', () => {
  it('returns normalised files and directories with their modes', async () => {
    const entries = await readUpload(
      await makeTar([
        { name: './a/', type: 'directory' },
        { name: 'a/b.txt', body: 'hi' },
      ]),
    );
    expect(entries.map((e) => [e.name, e.type, e.mode.toString(8), e.data?.toString()])).toEqual([
      ['a', 'directory', '755', undefined],
      ['a/b.txt', 'file', '644', 'hi'],
    ]);
  });

  const hostile: Array<[string, () => Readable | Promise<Readable>]> = [
    [
      'a PAX path override with ..',
      () => rawTar([{ name: 'ok.txt', pax: { path: '../../etc/evil' }, body: 'x' }]),
    ],
    [
      'a long (PAX-encoded) name that climbs out',
      () => rawTar([{ name: `${'d/'.repeat(60)}${'../'.repeat(70)}evil`, body: 'x' }]),
    ],
    ['a GNU long name that climbs out', () => gnuLongNameTar(`${'../'.repeat(50)}evil`, 'x')],
    [
      'a NUL byte in the name',
      () => rawTar([{ name: 'ok.txt', pax: { path: 'a\0/../../evil' }, body: 'x' }]),
    ],
    ['a 300-byte name component', () => rawTar([{ name: `${'n'.repeat(300)}`, body: 'x' }])],
    ['a 5000-byte path', () => rawTar([{ name: 'd/'.repeat(2500), type: 'directory' }])],
    [
      'a character device',
      () => rawTar([{ name: 'tty', type: 'character-device', devmajor: 5, devminor: 0 }]),
    ],
    ['a block device', () => rawTar([{ name: 'sda', type: 'block-device', devmajor: 8, devminor: 0 }])],
    ['a contiguous file', () => rawTar([{ name: 'c', type: 'contiguous-file', body: 'x' }])],
    ['a symlink that stays inside', () => rawTar([{ name: 'l', type: 'symlink', linkname: 'a' }])],
    ['garbage instead of tar', () => Readable.from([Buffer.alloc(1024, 7)])],
  ];
  for (const [what, make] of hostile) {
    it(`rejects ${what}`, async () => {
      const before = applied;
      const error = await readUpload(await make()).then(
        () => undefined,
        (e: { code?: string; message?: string }) => e,
      );
      expect(error?.code).toBe('ARCHIVE_REJECTED');
      if (what !== 'garbage instead of tar') expect(error?.message).not.toMatch(/not a readable tar/);
      expect(applied, 'nothing may be written for a hostile archive').toBe(before);
    });
  }

  it('reads a GNU long name that stays inside', async () => {
    const name = `${'d'.repeat(120)}/file.txt`;
    expect((await readUpload(gnuLongNameTar(name, 'x'))).map((e) => e.name)).toEqual([name]);
  });

  it('stops reading at the byte and entry limits', async () => {
    expect(await codeOf(readUpload(rawTar([{ name: 'a', body: 'x'.repeat(100) }]), { maxBytes: 10 }))).toBe(
      'FILE_TOO_LARGE',
    );
    expect(
      await codeOf(readUpload(rawTar([{ name: 'a' }, { name: 'b' }, { name: 'c' }]), { maxEntries: 2 })),
    ).toBe('ARCHIVE_REJECTED');
  });
});

describe('receiveUpload: the spool', () => {
  it('holds the upload in a private file while entries are written, then removes it', async () => {
    const seen = await receiveUpload(
      await makeTar([{ name: 'a.txt', body: 'hello' }]),
      { spoolDir },
      async (entries) => {
        for await (const e of entries) await collect(e.content);
        return spooled().map((name) => [
          name.startsWith(SPOOL_PREFIX),
          statSync(join(spoolDir, name)).mode & 0o777,
        ]);
      },
    );
    expect(seen).toEqual([[true, 0o600]]);
  });

  it('fails with FILE_TOO_LARGE as soon as the limit is passed, without reading the rest', async () => {
    const block = await entryBlocks('f.bin', 64 * 1024);
    let pulled = 0;
    let ended = false;
    async function* endless() {
      try {
        for (;;) {
          pulled++;
          yield block;
        }
      } finally {
        ended = true;
      }
    }
    const before = applied;
    expect(await codeOf(readUpload(Readable.from(endless()), { maxBytes: 1024 * 1024 }))).toBe(
      'FILE_TOO_LARGE',
    );
    expect(pulled).toBeLessThan(40); // 16 entries fit; the stream is not drained
    expect(ended).toBe(true);
    expect(applied).toBe(before);
  });

  it('bounds the tar itself, so records that are not entries cannot grow the spool forever', async () => {
    let pulled = 0;
    async function* zeros() {
      for (;;) {
        pulled++;
        yield Buffer.alloc(64 * 1024);
      }
    }
    expect(await codeOf(readUpload(Readable.from(zeros()), { maxTarBytes: 1024 * 1024 }))).toBe(
      'FILE_TOO_LARGE',
    );
    expect(pulled).toBeLessThanOrEqual(18); // 1 MiB is 16 chunks; Readable.from reads ahead
  });

  it('removes the spool when the client goes away mid-upload', async () => {
    const half = (await entryBlocks('f.bin', 256 * 1024)).subarray(0, 100_000);
    async function* cut(error: Error) {
      yield half;
      throw error;
    }
    const before = applied;
    expect(await codeOf(readUpload(Readable.from(cut(new Error('aborted')))))).toBe('BAD_REQUEST');
    // An error the input already translated (the API's body cap) passes unchanged.
    const capped = new SandboxError('PAYLOAD_TOO_LARGE', 'too large');
    expect(await codeOf(readUpload(Readable.from(cut(capped))))).toBe('PAYLOAD_TOO_LARGE');
    expect(applied).toBe(before);
  });

  it('removes the spool when writing fails', async () => {
    const failing = receiveUpload(await makeTar([{ name: 'a', body: 'x' }]), { spoolDir }, async () => {
      throw new SandboxError('DISK_FULL', 'full');
    });
    expect(await codeOf(failing)).toBe('DISK_FULL');
  });
});
