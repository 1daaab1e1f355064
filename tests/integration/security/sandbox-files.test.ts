// The file tools and transfers against a workspace the agent shapes with bash, through the public
// API: FIFOs and huge sparse files where files are expected (answered at once, never a hang), a
// directory swapped for a symlink to /etc while reads run (never an escape), names that are not
// UTF-8 (byte-exact through a download and an upload), and an upload refused midway (nothing of it
// stays).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, type Loose, startHarness, tarOf, text } from './harness.ts';

let h: Harness;
let agent: string;

const sh = async (command: string): Promise<string> => text(await h.bash(h.keyA, agent, command));
const PASSWD = /root:x:0:0/;

beforeAll(async () => {
  h = await startHarness();
  agent = await h.agent(h.keyA, { preset: 'standard' });
  expect(await sh('echo ready')).toBe('ready');
});

afterAll(async () => {
  await h?.close();
});

describe('files that are not regular files', () => {
  it('grep, read and /files answer a FIFO, a 64 GiB sparse file and /proc fds at once, and the next call works', async () => {
    expect(
      await sh(
        'mkfifo fifo && truncate -s 64G sparse && mkdir -p tree && mkfifo tree/pipe && echo needle > tree/x.txt && ln -s /proc/self/fd fds && echo made',
      ),
    ).toBe('made');
    const results = await h.calls(h.keyA, agent, [
      ['g1', 'grep', { pattern: 'x', path: 'fifo' }],
      ['r1', 'read', { file_path: 'fifo' }],
      ['g2', 'grep', { pattern: 'x', path: 'sparse' }],
      ['g3', 'grep', { pattern: 'needle', path: 'tree' }],
      ['g4', 'grep', { pattern: 'x', path: 'fds/0' }],
      ['r2', 'read', { file_path: 'fds/0' }],
    ]);
    const byId = Object.fromEntries(results.map((r: Loose) => [r.id, r]));
    expect(byId.g1.error?.code).toBe('NOT_A_FILE');
    expect(byId.r1.error?.code).toBe('NOT_A_FILE');
    expect(byId.g2.error?.code).toBe('FILE_TOO_LARGE');
    expect(text(byId.g3)).toBe('/workspace/tree/x.txt:1:needle');
    expect(byId.g4.error?.code).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(byId.r2.error?.code).toBe('PATH_OUTSIDE_WORKSPACE');
    const file = await h.http(h.keyA, 'GET', `/v1/agents/${agent}/files?path=fifo`);
    expect(file.status).toBe(400);
    expect(file.json.error.code).toBe('NOT_A_FILE');
    expect(await sh('echo next')).toBe('next');
  });
});

describe('a directory swapped for a symlink while the tools read', () => {
  it('no read, list, glob or grep ever returns what is outside the workspace', async () => {
    expect(await sh('mkdir -p race/d && echo inside > race/d/passwd && echo made')).toBe('made');
    // `d` is a directory, then a symlink to /etc, then the directory again, as fast as bash goes.
    const [job] = await h.calls(h.keyA, agent, [
      [
        'swap',
        'bash',
        {
          command: 'cd race && while [ ! -e stop ]; do mv -T d d.x; ln -s /etc d; rm d; mv -T d.x d; done',
          description: 'swap',
          run_in_background: true,
        },
      ],
    ]);
    expect(job.ok).toBe(true);
    let inside = 0;
    for (let round = 0; round < 10; round++) {
      const calls: [string, string, Record<string, unknown>][] = [];
      for (let i = 0; i < 48; i++) calls.push([`r${i}`, 'read', { file_path: 'race/d/passwd' }]);
      for (let i = 0; i < 8; i++) {
        calls.push([`g${i}`, 'grep', { pattern: 'root|inside', path: 'race/d' }]);
        calls.push([`l${i}`, 'glob', { pattern: '*', path: 'race/d' }]);
      }
      for (const r of await h.calls(h.keyA, agent, calls)) {
        const all = JSON.stringify(r);
        expect(all, r.id).not.toMatch(PASSWD);
        expect(all, r.id).not.toMatch(/hostname|shadow|os-release/);
        if (r.ok && text(r).includes('inside')) inside++;
      }
    }
    expect(inside).toBeGreaterThan(0);
    await sh('touch race/stop');
  });
});

describe('archives', () => {
  it('a name that is not UTF-8 downloads and uploads byte for byte', async () => {
    expect(
      await sh(
        "mkdir -p raw/sub && printf one > raw/$'bad\\xff\\xfe.txt' && printf two > raw/sub/ok.txt && echo made",
      ),
    ).toBe('made');
    const down = await h.http(h.keyA, 'GET', `/v1/agents/${agent}/archive?path=raw`);
    expect(down.status).toBe(200);
    const tar = Buffer.from(down.buf);
    expect(tar.includes(Buffer.from([0x62, 0x61, 0x64, 0xff, 0xfe, 0x2e]))).toBe(true);
    const up = await h.http(h.keyA, 'PUT', `/v1/agents/${agent}/archive?path=raw2`, new Uint8Array(tar), {
      'Content-Type': 'application/x-tar',
    });
    expect(up.status).toBe(200);
    expect(
      await sh("cat raw2/$'bad\\xff\\xfe.txt' raw2/sub/ok.txt; echo; ls raw2 | od -An -c | tr -s ' '"),
    ).toBe('onetwo\n b a d 377 376 . t x t \\n s u b \\n');
  });

  it('an upload refused midway (NOT_A_DIRECTORY) leaves nothing of itself', async () => {
    expect(await sh('mkdir -p up && echo old > up/keep.txt && echo file > up/x && echo made')).toBe('made');
    const tar = await tarOf([
      { header: { name: 'keep.txt' }, body: 'replaced' },
      { header: { name: 'first.txt' }, body: 'first' },
      { header: { name: 'x/y.txt' }, body: 'through a file' },
    ]);
    const res = await h.http(h.keyA, 'PUT', `/v1/agents/${agent}/archive?path=up`, tar, {
      'Content-Type': 'application/x-tar',
    });
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe('NOT_A_DIRECTORY');
    expect(await sh('ls -A up | tr "\\n" " "; cat up/keep.txt')).toBe('keep.txt x old');
  });
});
