// The docker provider's download path against a real sandboxd run locally. With a sandboxd that
// speaks streams, files come out of one stream each (a small file still in one read); without
// (an older image: `counted` hides the stream calls), in pieces of at most 1 MiB read only as the
// consumer pulls them, whatever the agent's read limit. Either way a file that grows is cut at its
// size, one that shrinks fails a single-file download and is padded in an archive, and a consumer
// that stops stops the reads.

import { createHash, randomBytes } from 'node:crypto';
import { appendFileSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { setTimeout as sleep } from 'node:timers/promises';
import { extract } from 'tar-stream';
import { describe, expect, it } from 'vitest';
import { collect } from '../../../host/sandbox/chunks.ts';
import { createContainerArchive } from '../../../host/sandbox/docker/archive.ts';
import { DOWNLOAD_PIECE_BYTES, fileDownload } from '../../../host/sandbox/download.ts';
import type { SandboxdFs } from '../../../host/sandbox/sandboxd/client.ts';
import { codeOf } from '../../contract/sandbox/suite.ts';
import { useLocalSandboxd } from '../sandboxd/harness.ts';

const local = useLocalSandboxd();
const MiB = DOWNLOAD_PIECE_BYTES;
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/**
 * A container archive over the local sandboxd that records every ranged read (and may act before
 * it); without `streams` it is the sandboxd of an older image, which has no stream calls.
 */
const counted = (before: (offset: number) => void = () => {}, maxDownloadBytes?: number, streams = false) => {
  const reads: Array<[offset: number, length: number]> = [];
  const { readStream, writeStream, ...plain } = local.c.fs;
  const fs: SandboxdFs = {
    ...plain,
    ...(streams
      ? {
          readStream: (path: string, offset: number, length: number) => {
            reads.push([offset, length]);
            before(offset);
            return local.c.fs.readStream?.(path, offset, length) as AsyncGenerator<Buffer>;
          },
          writeStream,
        }
      : {}),
    readRange: (path, offset, length) => {
      reads.push([offset, length]);
      before(offset);
      return local.c.fs.readRange(path, offset, length);
    },
  };
  const archive = createContainerArchive({
    use: (fn) => fn({ fs }),
    resolve: (p) => local.c.fs.resolve(p),
    ...(maxDownloadBytes === undefined ? {} : { maxDownloadBytes }),
  });
  return { archive, reads };
};
/** Each entry of a tar stream by name, as the sha256 of its content. */
const digests = async (tar: NodeJS.ReadableStream): Promise<Record<string, string>> => {
  const ex = extract();
  tar.pipe(ex);
  const files: Record<string, string> = {};
  for await (const entry of ex) files[entry.header.name] = sha(await buffer(entry as never));
  return files;
};
/** Reads a download to its end: the code it failed with and the bytes it yielded before. */
const drainShrunk = async (file: { content: AsyncIterable<Buffer> }) => {
  let got = 0;
  const drained = (async () => {
    for await (const piece of file.content) got += piece.length;
  })();
  return [await codeOf(drained), got];
};
const put = (name: string, data: Buffer): void => writeFileSync(join(local.sd.root, name), data);

describe('single-file downloads', () => {
  it('arrive byte-exact in pieces of 1 MiB, a small file in one read', async () => {
    const data = randomBytes(3 * MiB + 123);
    put('three.bin', data);
    put('small.txt', Buffer.from('small'));
    put('empty', Buffer.alloc(0));
    const { archive, reads } = counted();
    const file = await archive.downloadFile('three.bin');
    expect(file).toMatchObject({ path: `${local.sd.root}/three.bin`, size: data.length });
    expect(sha(await collect(file.content))).toBe(sha(data));
    expect(reads).toEqual([
      [0, MiB],
      [MiB, MiB],
      [2 * MiB, MiB],
      [3 * MiB, 123],
    ]);
    reads.length = 0;
    const small = await archive.downloadFile('small.txt');
    expect([small.size, (await collect(small.content)).toString()]).toEqual([5, 'small']);
    const empty = await archive.downloadFile('empty');
    expect([empty.size, (await collect(empty.content)).length]).toEqual([0, 0]);
    expect(reads).toHaveLength(2);
  });

  it('read a piece only when the consumer asks for it, and nothing once it stopped', async () => {
    put('eight.bin', randomBytes(8 * MiB));
    const { archive, reads } = counted();
    const file = await archive.downloadFile('eight.bin');
    const it = file.content[Symbol.asyncIterator]();
    for (let i = 1; i <= 3; i++) {
      await it.next();
      await sleep(20); // room for any read-ahead to show
      expect(reads).toHaveLength(i);
    }
    await it.return?.();
    await sleep(20); // an absence: room for a late read to show
    expect(reads).toHaveLength(3);
  });

  it('stop at the size the file had when a file grows, and fail when it shrinks', async () => {
    const data = randomBytes(3 * MiB);
    put('grows.bin', data);
    const grows = counted((offset) => {
      if (offset === MiB) appendFileSync(join(local.sd.root, 'grows.bin'), randomBytes(2 * MiB));
    });
    const grown = await grows.archive.downloadFile('grows.bin');
    expect(sha(await collect(grown.content))).toBe(sha(data));

    put('shrinks.bin', randomBytes(3 * MiB));
    const shrinks = counted((offset) => {
      if (offset === MiB) truncateSync(join(local.sd.root, 'shrinks.bin'), MiB + 10);
    });
    expect(await drainShrunk(await shrinks.archive.downloadFile('shrinks.bin'))).toEqual([
      'CONFLICT',
      MiB + 10,
    ]);
  });

  it('refuse missing files, directories, links out of the workspace and files over the limit up front', async () => {
    symlinkSync(local.sd.outside, join(local.sd.root, 'out'));
    writeFileSync(join(local.sd.outside, 'secret'), 'secret');
    put('over.bin', Buffer.alloc(2 * MiB + 1));
    const { archive } = counted(undefined, 2 * MiB);
    expect(await codeOf(archive.downloadFile('nope'))).toBe('FILE_NOT_FOUND');
    expect(await codeOf(archive.downloadFile('.'))).toBe('NOT_A_FILE');
    expect(await codeOf(archive.downloadFile('out/secret'))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(archive.downloadFile('../outside/secret'))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await codeOf(archive.downloadFile('over.bin'))).toBe('FILE_TOO_LARGE');
  });
});

describe('archive downloads', () => {
  it('read each file in pulled pieces and pad a file that shrank, keeping the tar whole', async () => {
    const big = randomBytes(3 * MiB + 5);
    await local.c.fs.mkdir('tree/sub', { recursive: true });
    put('tree/sub/big.bin', big);
    put('tree/shrinks.txt', Buffer.from('0123456789'));
    const { archive, reads } = counted(() => {
      if (reads.length === 1) truncateSync(join(local.sd.root, 'tree/shrinks.txt'), 4);
    });
    const tar = await archive.download('tree');
    await sleep(20); // an absence: room for an eager read to show
    expect(reads).toHaveLength(0); // listed, but nothing read before the tar is
    expect(await digests(tar)).toEqual({
      'shrinks.txt': sha(Buffer.from('0123\0\0\0\0\0\0')),
      'sub/': sha(Buffer.alloc(0)),
      'sub/big.bin': sha(big),
    });
    expect(reads.map(([, length]) => length)).toEqual([10, MiB, MiB, MiB, 5]);
  });
});

describe('downloads on streams', () => {
  it('arrive byte-exact: a small file in one read, a large one in a first read and one stream', async () => {
    const data = randomBytes(3 * MiB + 123);
    put('s-three.bin', data);
    put('s-small.txt', Buffer.from('small'));
    const { archive, reads } = counted(undefined, undefined, true);
    const file = await archive.downloadFile('s-three.bin');
    expect(sha(await collect(file.content))).toBe(sha(data));
    expect(reads).toEqual([
      [0, 64 * 1024],
      [64 * 1024, data.length - 64 * 1024],
    ]);
    const small = await archive.downloadFile('s-small.txt');
    expect((await collect(small.content)).toString()).toBe('small');
    expect(reads).toHaveLength(3);
    expect(local.c.openStreams).toBe(0);
  });

  it('stop at the size a growing file had, and fail when it shrinks', async () => {
    const data = randomBytes(3 * MiB);
    put('s-grows.bin', data);
    const grows = counted(
      (offset) => {
        if (offset > 0) appendFileSync(join(local.sd.root, 's-grows.bin'), randomBytes(2 * MiB));
      },
      undefined,
      true,
    );
    expect(sha(await collect((await grows.archive.downloadFile('s-grows.bin')).content))).toBe(sha(data));
    put('s-shrinks.bin', randomBytes(3 * MiB));
    const shrinks = counted(
      (offset) => {
        if (offset > 0) truncateSync(join(local.sd.root, 's-shrinks.bin'), MiB + 10);
      },
      undefined,
      true,
    );
    expect(await drainShrunk(await shrinks.archive.downloadFile('s-shrinks.bin'))).toEqual([
      'CONFLICT',
      MiB + 10,
    ]);
  });

  it('an archive reads each file on its own stream and pads a file that shrank', async () => {
    const big = randomBytes(3 * MiB + 5);
    await local.c.fs.mkdir('s-tree/sub', { recursive: true });
    put('s-tree/sub/big.bin', big);
    put('s-tree/shrinks.txt', Buffer.from('0123456789'));
    const { archive, reads } = counted(
      () => {
        if (reads.length === 1) truncateSync(join(local.sd.root, 's-tree/shrinks.txt'), 4);
      },
      undefined,
      true,
    );
    expect(await digests(await archive.download('s-tree'))).toEqual({
      'shrinks.txt': sha(Buffer.from('0123\0\0\0\0\0\0')),
      'sub/': sha(Buffer.alloc(0)),
      'sub/big.bin': sha(big),
    });
    expect(reads).toEqual([
      [0, 10],
      [0, big.length],
    ]);
  });
});

describe('fileDownload', () => {
  it('never yields more than the size, even from a source that answers more than asked', async () => {
    const read = async (offset: number, length: number) => Buffer.alloc(length + 100, offset % 251);
    const file = fileDownload('/w/f', 2 * MiB + 1, read);
    expect((await collect(file.content)).length).toBe(2 * MiB + 1);
  });
});
