// The docker provider's upload path against a real sandboxd run locally: a file of any length
// goes through in pieces, replaces the old file only at the end, and leaves nothing behind when it
// fails; archives are checked in full before the first write.

import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SandboxError } from '../../../host/errors.ts';
import { createContainerArchive } from '../../../host/sandbox/docker/archive.ts';
import { WRITE_CHUNK_BYTES, writeStream } from '../../../host/sandbox/docker/write-stream.ts';
import { codeOf, makeTar } from '../../contract/sandbox/suite.ts';
import { useLocalSandboxd } from '../sandboxd/harness.ts';

const local = useLocalSandboxd();

const PIECE = 64 * 1024;
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const leftovers = (dir: string): string[] =>
  readdirSync(join(local.sd.root, dir)).filter((n) => n.startsWith('.dsh-upload-'));

/** Yields `data` in uneven slices, then optionally fails. */
async function* slices(data: Buffer, failAfter?: number) {
  let at = 0;
  for (let i = 0; at < data.length; i++) {
    if (failAfter !== undefined && at >= failAfter) throw new SandboxError('BAD_REQUEST', 'client went away');
    const n = 1000 + ((i * 7919) % 50_000);
    yield data.subarray(at, at + n);
    at += n;
  }
}

describe('writeStream', () => {
  it('writes content of many pieces byte-exact, and small or empty content in one write', async () => {
    const cases: Array<[string, number]> = [
      ['ws/multi.bin', 5 * PIECE + 123],
      ['ws/exact.bin', 3 * PIECE],
      ['ws/small.bin', 100],
      ['ws/empty.bin', 0],
    ];
    for (const [path, size] of cases) {
      const data = randomBytes(size);
      const bytes = await writeStream(local.c.fs, local.c.fs.resolve(path), slices(data), {
        chunkBytes: PIECE,
      });
      expect(bytes, path).toBe(size);
      expect(sha(readFileSync(join(local.sd.root, path))), path).toBe(sha(data));
      expect((await local.c.fs.stat(path)).mode, path).toBe(0o644);
    }
    expect(leftovers('ws')).toEqual([]);
  });

  it('replaces the old file only once every byte arrived; a failed upload leaves it and no temp file', async () => {
    await local.c.fs.writeFile('ws/keep.sh', 'old', { mode: 0o750 });
    const data = randomBytes(4 * PIECE);
    const failed = writeStream(local.c.fs, local.c.fs.resolve('ws/keep.sh'), slices(data, 2 * PIECE), {
      chunkBytes: PIECE,
    });
    expect(await codeOf(failed)).toBe('BAD_REQUEST');
    expect(readFileSync(join(local.sd.root, 'ws/keep.sh'), 'utf8')).toBe('old');
    expect(leftovers('ws')).toEqual([]);
    // A complete upload replaces it and keeps its mode.
    await writeStream(local.c.fs, local.c.fs.resolve('ws/keep.sh'), slices(data), { chunkBytes: PIECE });
    expect(sha(readFileSync(join(local.sd.root, 'ws/keep.sh')))).toBe(sha(data));
    expect((await local.c.fs.stat('ws/keep.sh')).mode).toBe(0o750);
  });

  it('gives a long file a read-only mode last, and refuses a directory before writing', async () => {
    const data = randomBytes(2 * PIECE + 1);
    await writeStream(local.c.fs, local.c.fs.resolve('ws/ro.bin'), slices(data), {
      chunkBytes: PIECE,
      mode: 0o444,
    });
    expect((await local.c.fs.stat('ws/ro.bin')).mode).toBe(0o444);
    expect(sha(readFileSync(join(local.sd.root, 'ws/ro.bin')))).toBe(sha(data));
    await local.c.fs.mkdir('ws/dir');
    expect(
      await codeOf(
        writeStream(local.c.fs, local.c.fs.resolve('ws/dir'), slices(data), { chunkBytes: PIECE }),
      ),
    ).toBe('NOT_A_FILE');
    expect(leftovers('ws')).toEqual([]);
  });
});

describe('container archive through sandboxd', () => {
  const archive = () =>
    createContainerArchive({ use: (fn) => fn({ fs: local.c.fs }), resolve: (p) => local.c.fs.resolve(p) });

  it('uploads an archive and a single file larger than one write piece', async () => {
    const body = randomBytes(2 * WRITE_CHUNK_BYTES + 5);
    const tar = await makeTar([
      { name: 'd/', type: 'directory' },
      { name: 'd/big.bin', body },
      { name: 'd/small.txt', body: 'hi' },
    ]);
    expect(await archive().upload('arc', tar)).toEqual({ files: 2, bytes: body.length + 2 });
    expect(sha(readFileSync(join(local.sd.root, 'arc/d/big.bin')))).toBe(sha(body));
    const one = await archive().uploadFile('arc/one.bin', slices(body));
    expect(one).toEqual({ path: `${local.sd.root}/arc/one.bin`, bytes: body.length });
    expect(sha(readFileSync(join(local.sd.root, 'arc/one.bin')))).toBe(sha(body));
  });

  it('stops a single-file upload at maxBytes with FILE_TOO_LARGE, leaving the old file', async () => {
    await local.c.fs.writeFile('arc/capped.bin', 'old');
    const big = archive().uploadFile('arc/capped.bin', slices(randomBytes(3 * WRITE_CHUNK_BYTES)), {
      maxBytes: WRITE_CHUNK_BYTES + 10,
    });
    expect(await codeOf(big)).toBe('FILE_TOO_LARGE');
    expect(readFileSync(join(local.sd.root, 'arc/capped.bin'), 'utf8')).toBe('old');
    expect(leftovers('arc')).toEqual([]);
  });

  it('writes nothing for an archive that turns hostile after a large file', async () => {
    const tar = await makeTar([
      { name: 'first.bin', body: randomBytes(2 * WRITE_CHUNK_BYTES) },
      { name: '../escape.txt', body: 'x' },
    ]);
    expect(await codeOf(archive().upload('hostile', tar))).toBe('ARCHIVE_REJECTED');
    expect(await local.c.fs.exists('hostile')).toBe(false);
  });
});
