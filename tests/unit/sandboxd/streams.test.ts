// Bulk transfer over streams against a local sandboxd: byte-exact round trips of 16 MiB in both
// directions, files of 0xFF runs (the RESYNC marker's byte, stuffed on the wire), a consumer that
// stops early (the stream is freed and the next transfer works), errors sandboxd answers mid-stream,
// and interleaving: a small call answers while a transfer is under way.
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useLocalSandboxd } from './harness.ts';

const local = useLocalSandboxd();
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const MiB = 1024 * 1024;

/** Polls `check` until it holds or 5 s passed. */
const until = async (check: () => boolean): Promise<void> => {
  const deadline = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met within 5 s');
    await new Promise((r) => setTimeout(r, 10));
  }
};

async function* chunksOf(data: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let at = 0; at < data.length; at += size) yield data.subarray(at, at + size);
}

describe('sandboxd streams', () => {
  it('sandboxd offers streams in its hello', () => {
    expect(local.c.fs.readStream).toBeTypeOf('function');
    expect(local.c.fs.writeStream).toBeTypeOf('function');
  });

  it('downloads 16 MiB byte-exact', async () => {
    const data = randomBytes(16 * MiB);
    writeFileSync(join(local.sd.root, 'down.bin'), data);
    const parts: Buffer[] = [];
    for await (const piece of local.c.fs.readStream?.('down.bin', 0, data.length) ?? []) parts.push(piece);
    expect(sha(Buffer.concat(parts))).toBe(sha(data));
    expect(local.c.openStreams).toBe(0);
  });

  it('downloads byte-exact to a slow consumer (a frame is reused only once it was written)', async () => {
    const data = randomBytes(8 * MiB);
    writeFileSync(join(local.sd.root, 'slow-down.bin'), data);
    const parts: Buffer[] = [];
    let n = 0;
    for await (const piece of local.c.fs.readStream?.('slow-down.bin', 0, data.length) ?? []) {
      parts.push(Buffer.from(piece));
      // Every few pieces the consumer lags, so sandboxd's output backs up with frames in flight.
      if (++n % 16 === 0) await new Promise((r) => setTimeout(r, 20));
    }
    expect(sha(Buffer.concat(parts))).toBe(sha(data));
  });

  it('uploads 16 MiB byte-exact, replacing the file only at the end', async () => {
    const data = randomBytes(16 * MiB);
    const bytes = await local.c.fs.writeStream?.('up/new.bin', chunksOf(data, 100_000), { mode: 0o640 });
    expect(bytes).toBe(data.length);
    expect(sha(readFileSync(join(local.sd.root, 'up/new.bin')))).toBe(sha(data));
    expect((await local.c.fs.stat('up/new.bin')).mode).toBe(0o640);
    expect(local.c.openStreams).toBe(0);
  });

  it('carries runs of 0xFF (the RESYNC byte) and of 0xFF then 0x00 intact', async () => {
    const data = Buffer.concat([
      Buffer.alloc(3 * MiB + 7, 0xff),
      Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0xff]),
      Buffer.alloc(1000, 0xff),
    ]);
    await local.c.fs.writeStream?.('ff.bin', chunksOf(data, 65_537));
    expect(sha(readFileSync(join(local.sd.root, 'ff.bin')))).toBe(sha(data));
    const parts: Buffer[] = [];
    for await (const piece of local.c.fs.readStream?.('ff.bin', 0, data.length) ?? []) parts.push(piece);
    expect(sha(Buffer.concat(parts))).toBe(sha(data));
  });

  it('an abandoned download frees its stream, and the next transfer works', async () => {
    writeFileSync(join(local.sd.root, 'big.bin'), randomBytes(32 * MiB));
    for await (const piece of local.c.fs.readStream?.('big.bin', 0, 32 * MiB) ?? []) {
      expect(piece.length).toBeGreaterThan(0);
      break; // the consumer goes away after one piece
    }
    await until(() => local.c.openStreams === 0);
    const small = Buffer.from('after');
    writeFileSync(join(local.sd.root, 'after.txt'), small);
    const parts: Buffer[] = [];
    for await (const piece of local.c.fs.readStream?.('after.txt', 0, 5) ?? []) parts.push(piece);
    expect(Buffer.concat(parts).toString()).toBe('after');
  });

  it('an upload whose source fails leaves the old file and no temporary file', async () => {
    writeFileSync(join(local.sd.root, 'keep.txt'), 'old');
    async function* failing(): AsyncGenerator<Buffer> {
      yield randomBytes(2 * MiB);
      throw new Error('client went away');
    }
    await expect(local.c.fs.writeStream?.('keep.txt', failing())).rejects.toThrow('client went away');
    await until(() => local.c.openStreams === 0);
    expect(readFileSync(join(local.sd.root, 'keep.txt'), 'utf8')).toBe('old');
    expect((await local.c.fs.list('.')).map((e) => e.name).filter((n) => n.includes('sandboxd-tmp'))).toEqual(
      [],
    );
  });

  it("answers sandboxd's error for a missing file or a directory in the way", async () => {
    const read = async () => {
      for await (const _ of local.c.fs.readStream?.('nope.bin', 0, 10) ?? []);
    };
    await expect(read()).rejects.toMatchObject({ code: 'FILE_NOT_FOUND' });
    await local.c.fs.mkdir('adir');
    await expect(local.c.fs.writeStream?.('adir', chunksOf(randomBytes(MiB), 1000))).rejects.toMatchObject({
      code: 'NOT_A_FILE',
    });
    expect(local.c.openStreams).toBe(0);
  });

  it('answers a small call while a download is stalled by its consumer', async () => {
    writeFileSync(join(local.sd.root, 'slow.bin'), randomBytes(8 * MiB));
    const it = local.c.fs.readStream?.('slow.bin', 0, 8 * MiB)[Symbol.asyncIterator]();
    await it?.next(); // one piece taken, the rest waits on credit
    expect((await local.c.fs.stat('slow.bin')).size).toBe(8 * MiB);
    await it?.return(undefined);
    await until(() => local.c.openStreams === 0);
  });
});
