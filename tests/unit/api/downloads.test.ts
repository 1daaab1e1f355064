// GET /files and /archive over a real loopback socket, from a real sandboxd run locally (the agent's
// archive port is the docker provider's, over that sandboxd as an image without streams speaks it,
// with every ranged read counted): bodies
// are streamed with Content-Length, a client that goes away stops the reads, and a file that
// shrinks mid-download cuts the connection instead of ending the body short.

import { createHash, randomBytes } from 'node:crypto';
import { truncateSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ServerType, serve } from '@hono/node-server';
import { extract } from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createContainerArchive } from '../../../host/sandbox/docker/archive.ts';
import { DOWNLOAD_PIECE_BYTES as MiB } from '../../../host/sandbox/download.ts';
import type { SandboxdFs } from '../../../host/sandbox/sandboxd/client.ts';
import { useLocalSandboxd } from '../sandboxd/harness.ts';
import { makeApi } from './harness.ts';

const local = useLocalSandboxd();
const api = await makeApi();
let server: ServerType;
let base: string;
/** The same agent API, for a second agent whose archive port speaks streams. */
let streamBase: string;
let reads = 0;
/** Runs before each ranged read, with its offset. */
let beforeRead: (path: string, offset: number) => void = () => {};

beforeAll(async () => {
  const agent = await api.createAgent(api.keyA);
  await api.request(api.keyA, 'PUT', `/v1/agents/${agent.id}/files?path=made`, 'x'); // makes the sandbox
  const sandbox = await api.sandboxes.get(agent.id);
  if (sandbox === undefined) throw new Error('no sandbox');
  // The piece-by-piece path of images whose sandboxd does not speak streams (streams are covered by
  // tests/unit/sandboxd/streams.test.ts and tests/integration/api/downloads.test.ts).
  const { readStream: _r, writeStream: _w, ...pieces } = local.c.fs;
  const fs: SandboxdFs = {
    ...pieces,
    readRange: (path, offset, length) => {
      reads++;
      beforeRead(path, offset);
      return local.c.fs.readRange(path, offset, length);
    },
  };
  // The memory sandbox's archive port, swapped for the docker provider's over the local sandboxd.
  Object.assign(sandbox, {
    archive: createContainerArchive({ use: (fn) => fn({ fs }), resolve: (p) => local.c.fs.resolve(p) }),
  });
  const streaming = await api.createAgent(api.keyA);
  await api.request(api.keyA, 'PUT', `/v1/agents/${streaming.id}/files?path=made`, 'x');
  const streamingSandbox = await api.sandboxes.get(streaming.id);
  if (streamingSandbox === undefined) throw new Error('no sandbox');
  Object.assign(streamingSandbox, {
    archive: createContainerArchive({
      use: (fn) => fn({ fs: local.c.fs }),
      resolve: (p) => local.c.fs.resolve(p),
    }),
  });
  await new Promise<void>((resolve) => {
    server = serve({ fetch: api.app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve());
  });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/agents`;
  base = `${origin}/${agent.id}`;
  streamBase = `${origin}/${streaming.id}`;
});
afterAll(async () => {
  if (server) {
    (server as Server).closeAllConnections();
    await new Promise((r) => server.close(r));
  }
  await api.close();
});

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const put = (name: string, data: Buffer): void => writeFileSync(join(local.sd.root, name), data);
/** A file of `size` zero bytes that takes no disk. */
const sparse = (name: string, size: number): void => {
  put(name, Buffer.alloc(0));
  truncateSync(join(local.sd.root, name), size);
};
const get = (path: string, signal?: AbortSignal) =>
  fetch(`${base}${path}`, {
    headers: { Authorization: `Bearer ${api.keyA}` },
    ...(signal ? { signal } : {}),
  });
/**
 * Starts a download, takes its first chunk and goes away; resolves with the reads counted once none
 * happened for 200 ms, and checks that none follow.
 */
const readsAfterGoingAway = async (path: string): Promise<number> => {
  reads = 0;
  const ac = new AbortController();
  const reader = ((await get(path, ac.signal)).body as ReadableStream<Uint8Array>).getReader();
  await reader.read();
  ac.abort();
  await reader.read().catch(() => {});
  for (let last = -1; last !== reads; ) {
    last = reads;
    await sleep(200);
  }
  const settled = reads;
  await sleep(300);
  expect(reads).toBe(settled);
  return settled;
};

describe('GET /files', () => {
  it('streams the file with its Content-Length, one read per 1 MiB piece', async () => {
    const data = randomBytes(3 * MiB + 7);
    put('three.bin', data);
    reads = 0;
    const res = await get('/files?path=three.bin');
    expect([res.status, res.headers.get('content-length')]).toEqual([200, String(data.length)]);
    expect(sha(new Uint8Array(await res.arrayBuffer()))).toBe(sha(data));
    expect(reads).toBe(4);
    const missing = await get('/files?path=nope');
    expect([missing.status, ((await missing.json()) as { error: { code: string } }).error.code]).toEqual([
      404,
      'FILE_NOT_FOUND',
    ]);
  });

  it('stops reading from the sandbox when the client goes away', async () => {
    sparse('sparse.bin', 256 * MiB);
    // Socket buffers may take a few pieces before the client goes; 256 were there to read.
    expect(await readsAfterGoingAway('/files?path=sparse.bin')).toBeLessThan(16);
    // And the service goes on serving.
    expect((await get('/files?path=three.bin')).status).toBe(200);
  });

  it('cuts the connection, instead of ending short, when the file shrinks meanwhile', async () => {
    put('shrinks.bin', randomBytes(4 * MiB));
    beforeRead = (path, offset) => {
      if (path.endsWith('/shrinks.bin') && offset === 2 * MiB) truncateSync(path, 2 * MiB + 1);
    };
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {}); // the server logs why it cut
    try {
      const res = await get('/files?path=shrinks.bin');
      expect(res.headers.get('content-length')).toBe(String(4 * MiB));
      await expect(res.arrayBuffer()).rejects.toThrow();
      expect(logged).toHaveBeenCalledWith(expect.objectContaining({ code: 'CONFLICT' }));
    } finally {
      beforeRead = () => {};
      logged.mockRestore();
    }
  });
});

describe('GET /files on streams', () => {
  it('cuts the connection, instead of ending short, when the file shrinks meanwhile', async () => {
    put('shrinks-streamed.bin', randomBytes(32 * MiB));
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const res = await fetch(`${streamBase}/files?path=shrinks-streamed.bin`, {
        headers: { Authorization: `Bearer ${api.keyA}` },
      });
      expect(res.headers.get('content-length')).toBe(String(32 * MiB));
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      let got = (await reader.read()).value?.byteLength ?? 0;
      truncateSync(join(local.sd.root, 'shrinks-streamed.bin'), MiB);
      const rest = (async () => {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return got;
          got += value.byteLength;
        }
      })();
      await expect(rest).rejects.toThrow();
      expect(got).toBeLessThan(32 * MiB);
    } finally {
      logged.mockRestore();
    }
  });
});

describe('GET /archive', () => {
  it('streams a tar of the directory, and stops reading when the client goes away', async () => {
    await local.c.fs.mkdir('tree', { recursive: true });
    const big = randomBytes(3 * MiB + 5);
    put('tree/big.bin', big);
    put('tree/small.txt', Buffer.from('small'));
    const res = await get('/archive?path=tree');
    expect(res.status).toBe(200);
    const ex = extract();
    Readable.fromWeb(res.body as never).pipe(ex);
    const files: Record<string, string> = {};
    for await (const entry of ex) files[entry.header.name] = sha(await buffer(entry as never));
    expect(files).toEqual({ 'big.bin': sha(big), 'small.txt': sha(Buffer.from('small')) });

    sparse('tree/huge.bin', 256 * MiB);
    expect(await readsAfterGoingAway('/archive?path=tree')).toBeLessThan(16);
  });
});
