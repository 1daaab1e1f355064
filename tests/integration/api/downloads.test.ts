// Downloads through the real HTTP API out of a real container: a 20 MiB file (twice the agent's
// model-facing read limit) and a directory holding one, byte-exact, streamed with Content-Length
// for the file; and a client that goes away mid-download leaves the service and the sandbox
// working. That reads stop when the client goes away, and never run ahead of the socket, is
// asserted where reads can be counted (tests/unit/api/downloads.test.ts).
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readlinkSync } from 'node:fs';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { extract } from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, type Loose, startHarness, text } from '../security/harness.ts';

const MiB = 1024 * 1024;
let h: Harness;
let agent: string;
const sums: Record<string, string> = {};

const sh = async (command: string): Promise<string> => text((await h.bash(h.keyA, agent, command)) as Loose);
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const get = (path: string, signal?: AbortSignal) =>
  fetch(`${h.server.url}/v1/agents/${agent}${path}`, {
    headers: { Authorization: `Bearer ${h.keyA}` },
    ...(signal ? { signal } : {}),
  });

/** The files sandboxd holds open, seen from the host (it is non-dumpable inside its container). */
const sandboxdOpenFiles = async (): Promise<string> => {
  const [info] = await h.fixture.docker.listContainers({ filters: { label: [`dsh.agent=${agent}`] } });
  const top = await h.fixture.docker.getContainer(info?.Id as string).top({ ps_args: '-eo pid,args' });
  const row = top.Processes?.find((p: string[]) =>
    /^\S*node \/opt\/sandboxd\/sandboxd\.cjs/.test(p[1] ?? ''),
  );
  const fds = `/proc/${row?.[0]}/fd`;
  return readdirSync(fds)
    .map((fd) => {
      try {
        return readlinkSync(`${fds}/${fd}`);
      } catch {
        return '';
      }
    })
    .join('\n');
};

beforeAll(async () => {
  h = await startHarness();
  agent = await h.agent(h.keyA, { preset: 'standard' });
  const out = await sh(
    [
      'mkdir -p dl/tree/sub',
      `head -c ${20 * MiB} /dev/urandom > dl/big.bin`,
      `head -c ${20 * MiB + 5} /dev/urandom > dl/tree/sub/big.bin`,
      'printf small > dl/tree/small.txt',
      'cd dl && sha256sum big.bin tree/sub/big.bin tree/small.txt',
    ].join(' && '),
  );
  for (const line of out.trim().split('\n')) {
    const [sum, name] = line.split(/\s+/);
    sums[name as string] = sum as string;
  }
  expect(Object.keys(sums)).toHaveLength(3);
});
afterAll(async () => {
  await h?.close();
});

describe('downloads', () => {
  it('GET /files streams a 20 MiB file byte-exact with its Content-Length', async () => {
    const res = await get('/files?path=dl/big.bin');
    expect([res.status, res.headers.get('content-length')]).toEqual([200, String(20 * MiB)]);
    expect(sha(new Uint8Array(await res.arrayBuffer()))).toBe(sums['big.bin']);
  });

  it('PUT then GET /files round-trips 16 MiB byte-exact', async () => {
    const data = randomBytes(16 * MiB);
    const put = await fetch(`${h.server.url}/v1/agents/${agent}/files?path=dl/rt.bin`, {
      method: 'PUT',
      headers: { Authorization: `Bearer ${h.keyA}` },
      body: data,
    });
    expect(await put.json()).toEqual({ path: '/workspace/dl/rt.bin', bytes: data.length });
    const back = await get('/files?path=dl/rt.bin');
    expect(sha(new Uint8Array(await back.arrayBuffer()))).toBe(sha(data));
  });

  it('GET /archive streams a directory holding a 20 MiB file byte-exact', async () => {
    const res = await get('/archive?path=dl/tree');
    expect([res.status, res.headers.get('content-type')]).toEqual([200, 'application/x-tar']);
    const ex = extract();
    Readable.fromWeb(res.body as never).pipe(ex);
    const got: Record<string, string> = {};
    for await (const entry of ex) {
      const body = await buffer(entry as never);
      if (entry.header.type === 'file') got[`tree/${entry.header.name}`] = sha(body);
    }
    expect(got).toEqual({
      'tree/small.txt': sums['tree/small.txt'],
      'tree/sub/big.bin': sums['tree/sub/big.bin'],
    });
  });

  it('a client that goes away mid-download leaves the service and the sandbox working', async () => {
    for (const path of ['/files?path=dl/big.bin', '/archive?path=dl/tree']) {
      const ac = new AbortController();
      const res = await get(path, ac.signal);
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      expect((await reader.read()).done).toBe(false);
      // Mid-transfer, sandboxd holds the file open (the check below would see it).
      if (path.startsWith('/files')) expect(await sandboxdOpenFiles()).toMatch(/big\.bin/);
      ac.abort();
      await expect(reader.read()).rejects.toThrow();
    }
    // The aborted transfers' streams are freed: sandboxd stopped reading and closed the files.
    const deadline = Date.now() + 10_000;
    let open = await sandboxdOpenFiles();
    while (/big\.bin/.test(open) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      open = await sandboxdOpenFiles();
    }
    expect(open).not.toMatch(/big\.bin/);
    const again = await get('/files?path=dl/big.bin');
    expect(sha(new Uint8Array(await again.arrayBuffer()))).toBe(sums['big.bin']);
    expect((await sh('echo still here')).trim()).toBe('still here');
    expect((await h.http(h.keyA, 'GET', '/v1/health')).status).toBe(200);
  });
});
