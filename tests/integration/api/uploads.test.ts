// Uploads through the real HTTP API into a real container, larger than one sandboxd write piece
// and than one frame, byte-exact; and never held whole in the API process. What we assert is the
// mechanism rather than RSS figures: an archive is spooled to a private temporary file that exists
// only while its upload runs; a single file goes straight into the sandbox, under a hidden temp
// name beside its target that replaces the old file only once every byte arrived; a client that
// goes away leaves neither behind.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { pack } from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SPOOL_PREFIX } from '../../../host/sandbox/spool.ts';
import { type Harness, type Loose, startHarness, text } from '../security/harness.ts';

const MiB = 1024 * 1024;
let h: Harness;
let agent: string;
let spoolDir: string;
const savedTmp = process.env.TMPDIR;

beforeAll(async () => {
  h = await startHarness({ maxUploadBytes: 64 * MiB });
  agent = await h.agent(h.keyA, { preset: 'standard' });
  // The API runs in this process: its spool files go to os.tmpdir(), made private to this file.
  spoolDir = mkdtempSync(join(tmpdir(), 'dsh-spool-it-'));
  process.env.TMPDIR = spoolDir;
});
afterAll(async () => {
  if (savedTmp === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmp;
  await h?.close();
  if (spoolDir) rmSync(spoolDir, { recursive: true, force: true });
});

/** A tar of files with the given modes (entries queued at once: large bodies drain as it is read). */
const tarOf = async (files: Array<[name: string, body: Buffer, mode: number]>): Promise<Buffer> => {
  const p = pack();
  for (const [name, body, mode] of files) p.entry({ name, mode }, body);
  p.finalize();
  return buffer(p as never);
};
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const spools = (): string[] => readdirSync(spoolDir).filter((n) => n.startsWith(SPOOL_PREFIX));
const sh = async (command: string): Promise<string> => text((await h.bash(h.keyA, agent, command)) as Loose);
const until = async (what: string, check: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> => {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

/**
 * A PUT whose body sends `head`, then waits for `release()` before sending the rest, in 1 MiB
 * pieces (chunked, so the server cannot know the size up front). `abort()` cuts the connection.
 */
const gatedPut = (path: string, data: Buffer, head: number) => {
  let release = (): void => {};
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const ac = new AbortController();
  let at = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (at >= head) await gate;
      if (at >= data.length) return controller.close();
      const n = Math.min(at < head ? head - at : MiB, data.length - at);
      controller.enqueue(data.subarray(at, at + n));
      at += n;
    },
  });
  const response = fetch(`${h.server.url}/v1/agents/${agent}${path}`, {
    method: 'PUT',
    headers: { Authorization: `Bearer ${h.keyA}` },
    body,
    duplex: 'half',
    signal: ac.signal,
  } as RequestInit);
  return { response, release, abort: () => ac.abort() };
};

describe('archive uploads', () => {
  it('arrive byte-exact, read-only modes included, through a spool that exists only during the upload', async () => {
    const blob = randomBytes(20 * MiB);
    const ro = randomBytes(2 * MiB + 7);
    const tar = await tarOf([
      ['blob.bin', blob, 0o644],
      ['ro.bin', ro, 0o444],
    ]);
    const put = gatedPut('/archive?path=up', tar, 3 * MiB);
    await until('the spool file', () => spools().length === 1);
    expect(statSync(join(spoolDir, spools()[0] as string)).mode & 0o777).toBe(0o600);
    expect(await sh('ls -A up 2>&1 | head -1')).toMatch(/No such file/); // nothing written yet
    put.release();
    const res = await put.response;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ files: 2, bytes: blob.length + ro.length });
    expect(spools()).toEqual([]);
    expect((await sh('sha256sum up/blob.bin up/ro.bin; stat -c %a up/ro.bin')).split('\n')).toEqual([
      `${sha(blob)}  up/blob.bin`,
      `${sha(ro)}  up/ro.bin`,
      '444',
    ]);
  });

  it('leave no spool and write nothing when the client goes away', async () => {
    const tar = await tarOf([['x.bin', randomBytes(8 * MiB), 0o644]]);
    const put = gatedPut('/archive?path=gone', tar, 2 * MiB);
    await until('the spool file', () => spools().length === 1);
    put.abort();
    await expect(put.response).rejects.toThrow();
    await until('the spool to be removed', () => spools().length === 0);
    expect(await sh('ls -A gone 2>&1 | head -1')).toMatch(/No such file/);
  });
});

describe('single-file uploads', () => {
  // The hidden temp file beside the target: sandboxd's own (streams) or the host's (older images).
  const temps = async (): Promise<string> =>
    sh(`ls -A files | grep -cE '^[.]dsh-upload-|[.]sandboxd-tmp$' || true`);

  it('stream into the sandbox and replace the old file only once complete', async () => {
    const old = await h.http(h.keyA, 'PUT', `/v1/agents/${agent}/files?path=files/one.bin`, 'old');
    expect(old.status).toBe(200);
    const data = randomBytes(20 * MiB);
    const put = gatedPut('/files?path=files/one.bin', data, 3 * MiB);
    await until('the hidden temp file', async () => (await temps()) === '1');
    expect(await sh('cat files/one.bin')).toBe('old');
    expect(spools()).toEqual([]); // single files are not spooled on the host
    put.release();
    const res = await put.response;
    expect(await res.json()).toEqual({ path: '/workspace/files/one.bin', bytes: data.length });
    expect(await sh('sha256sum files/one.bin')).toBe(`${sha(data)}  files/one.bin`);
    expect(await temps()).toBe('0');
  });

  it('leave the old file and no temp file when the client goes away', async () => {
    const put = gatedPut('/files?path=files/one.bin', randomBytes(8 * MiB), 3 * MiB);
    await until('the hidden temp file', async () => (await temps()) === '1');
    put.abort();
    await expect(put.response).rejects.toThrow();
    await until('the temp file to be removed', async () => (await temps()) === '0');
    expect((await sh('stat -c %s files/one.bin')).trim()).toBe(String(20 * MiB));
  });
});
