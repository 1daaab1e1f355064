// Packing downloads: what we write is a tar that tar-stream and GNU tar read back the same (long
// and non-ASCII names, modes, times, exact sizes), and it is pulled: a file's next piece is asked
// for only when the reader asks for more, and a reader that stops ends the source.

import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { setTimeout as sleep } from 'node:timers/promises';
import { extract } from 'tar-stream';
import { afterAll, describe, expect, it } from 'vitest';
import { type PackEntry, packEntries } from '../../../host/sandbox/tar-pack.ts';
import { until } from '../../helpers/until.ts';

const MiB = 1024 * 1024;
const dir = mkdtempSync(join(tmpdir(), 'dsh-tar-pack-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function* parts(...chunks: Array<string | Buffer>) {
  for (const c of chunks) yield Buffer.from(c);
}
const file = (name: string, body: string | Buffer, mode = 0o644): PackEntry => ({
  name,
  type: 'file',
  mode,
  mtimeMs: 1_700_000_000_000,
  size: Buffer.byteLength(body),
  content: () => parts(body),
});

/** Every entry as tar-stream reads it: header fields and content. */
const unpack = async (tar: Readable) => {
  const ex = extract();
  tar.pipe(ex);
  const out: Array<{ name: string; type: string; mode: number; mtime: number; body: string }> = [];
  for await (const entry of ex) {
    const body = (await buffer(entry as never)).toString('latin1');
    const h = entry.header;
    out.push({ name: h.name, type: String(h.type), mode: h.mode ?? 0, mtime: h.mtime?.getTime() ?? 0, body });
  }
  return out;
};

const long = `${'d'.repeat(90)}/${'e'.repeat(90)}/name.txt`; // > 100 bytes: ustar prefix + name
const longer = `${'x'.repeat(120)}/${'y'.repeat(120)}/${'z'.repeat(120)}.txt`; // fits neither: PAX
const unicode = 'ünïcødé/ファイル.txt';
const entries = (): PackEntry[] => [
  { name: 'sub/', type: 'directory', mode: 0o750, mtimeMs: 1_700_000_000_000 },
  file('sub/a.txt', 'hello'),
  file('sub/run.sh', '#!/bin/sh\n', 0o755),
  file('empty', ''),
  file(long, 'long'),
  file(longer, 'longer'),
  file(unicode, 'unicode'),
  file('block.bin', Buffer.alloc(512, 7)),
];

describe('packEntries', () => {
  it('writes a tar that tar-stream reads back entry for entry', async () => {
    expect(await unpack(packEntries(entries()))).toEqual([
      { name: 'sub/', type: 'directory', mode: 0o750, mtime: 1_700_000_000_000, body: '' },
      { name: 'sub/a.txt', type: 'file', mode: 0o644, mtime: 1_700_000_000_000, body: 'hello' },
      { name: 'sub/run.sh', type: 'file', mode: 0o755, mtime: 1_700_000_000_000, body: '#!/bin/sh\n' },
      { name: 'empty', type: 'file', mode: 0o644, mtime: 1_700_000_000_000, body: '' },
      { name: long, type: 'file', mode: 0o644, mtime: 1_700_000_000_000, body: 'long' },
      { name: longer, type: 'file', mode: 0o644, mtime: 1_700_000_000_000, body: 'longer' },
      {
        name: unicode,
        type: 'file',
        mode: 0o644,
        mtime: 1_700_000_000_000,
        body: Buffer.from('unicode').toString('latin1'),
      },
      {
        name: 'block.bin',
        type: 'file',
        mode: 0o644,
        mtime: 1_700_000_000_000,
        body: Buffer.alloc(512, 7).toString('latin1'),
      },
    ]);
  });

  it('writes a tar that GNU tar extracts without a warning', async () => {
    const path = join(dir, 'gnu.tar');
    writeFileSync(path, await buffer(packEntries(entries())));
    const out = join(dir, 'gnu');
    rmSync(out, { recursive: true, force: true });
    mkdirSync(out);
    const r = spawnSync('tar', ['-xf', path, '-C', out], { encoding: 'utf8' });
    expect([r.status, r.stderr]).toEqual([0, '']);
    expect(readFileSync(join(out, 'sub/a.txt'), 'utf8')).toBe('hello');
    expect(readFileSync(join(out, long), 'utf8')).toBe('long');
    expect(readFileSync(join(out, longer), 'utf8')).toBe('longer');
    expect(readFileSync(join(out, unicode), 'utf8')).toBe('unicode');
    expect(statSync(join(out, 'sub/run.sh')).mode & 0o777).toBe(0o755);
    expect(statSync(join(out, 'sub/run.sh')).mtimeMs).toBe(1_700_000_000_000);
  });

  it('writes exactly the declared size: a short source is padded with zeros, a long one cut', async () => {
    const tar = packEntries([
      { name: 'short.txt', type: 'file', mode: 0o644, size: 6, content: () => parts('abc') },
      { name: 'long.txt', type: 'file', mode: 0o644, size: 4, content: () => parts('0123', '456789') },
      { name: 'exact.txt', type: 'file', mode: 0o644, size: 5, content: () => parts('he', 'llo') },
      { name: 'none.txt', type: 'file', mode: 0o644, size: 2 },
    ]);
    expect((await unpack(tar)).map((e) => [e.name, e.body])).toEqual([
      ['short.txt', 'abc\0\0\0'],
      ['long.txt', '0123'],
      ['exact.txt', 'hello'],
      ['none.txt', '\0\0'],
    ]);
  });

  it('declares a size past the 8 GiB of ustar in a PAX record', async () => {
    const size = 8 * 1024 * MiB;
    const tar = packEntries([{ name: 'huge.bin', type: 'file', mode: 0o644, size }]);
    const head = (await tar[Symbol.asyncIterator]().next()).value as Buffer; // headers only
    tar.destroy();
    expect(head.toString('latin1', 0, 10)).toBe('PaxHeader/');
    expect(head.toString('latin1', 512, 1024)).toContain(`size=${size}\n`);
    expect(head.subarray(1024, 1124).toString('latin1').replace(/\0+$/, '')).toBe('huge.bin');
  });

  it('asks for a piece only when the reader asks for more, and a reader that stops ends the source', async () => {
    let pulled = 0;
    let ended = false;
    async function* source() {
      try {
        for (let i = 0; i < 64; i++) {
          pulled++;
          yield Buffer.alloc(MiB, i);
        }
      } finally {
        ended = true;
      }
    }
    const tar = packEntries([
      { name: 'big.bin', type: 'file', mode: 0o644, size: 64 * MiB, content: source },
    ]);
    await sleep(20); // an absence: room for an eager pull to show
    expect(pulled).toBe(0);
    const it = tar[Symbol.asyncIterator]();
    expect(((await it.next()).value as Buffer).length).toBe(512); // the header
    let received = 0;
    for (let i = 0; i < 3; i++) {
      received += ((await it.next()).value as Buffer).length;
      await sleep(20); // room for any read-ahead to show
      expect(pulled).toBe(received / MiB);
    }
    tar.destroy();
    await until(() => ended, { what: 'the source to be closed' });
    expect(pulled).toBe(3);
  });
});
