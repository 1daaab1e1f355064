// Host-side file paths under attack, through the public API: traversal payloads in every path
// argument of every file tool and of /files and /archive, symlinks planted with bash and then used
// through the other tools and transfers, and hostile tar uploads. Guarantee: nothing is read or
// written outside /workspace, and a hostile archive writes nothing at all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, type Loose, startHarness, tarEntries, tarOf, text } from './harness.ts';

let h: Harness;
let agent: string;

const PASSWD = /root:x:0:0/;

const TRAVERSALS = [
  '../../../../etc/passwd',
  '/etc/passwd',
  'a/../../etc/passwd',
  '/workspace/../etc/passwd',
  '/workspace/../../../../etc/passwd',
  '....//....//....//etc/passwd',
  '..\\..\\..\\etc\\passwd',
  '%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd',
  '%252e%252e%252fetc%252fpasswd',
  '..%c0%af..%c0%afetc%c0%afpasswd',
  '\uff0e\uff0e\u2215\uff0e\uff0e\u2215etc\u2215passwd',
  '/proc/self/root/etc/passwd',
  '/proc/1/root/etc/passwd',
  '/proc/self/environ',
  '~/../../etc/passwd',
  'ok.txt\u0000/../../etc/passwd',
  '../etc/passwd\u0000.txt',
  `${'a/'.repeat(3000)}x`,
  `${'b'.repeat(300)}/x`,
  `${'../'.repeat(2000)}etc/passwd`,
];

/** Files written anywhere in the container except /workspace since the marker. */
const strayFiles = async (): Promise<string> => {
  const r: Loose = await h.bash(
    h.keyA,
    agent,
    'find / -xdev -newer /tmp/.marker -type f -not -path "/workspace/*" -not -path "/proc/*" -not -path "/tmp/.marker" 2>/dev/null | head',
  );
  return text(r) === '(no output)' ? '' : text(r);
};

beforeAll(async () => {
  h = await startHarness();
  agent = await h.agent(h.keyA, { preset: 'standard' });
  const r: Loose = await h.bash(
    h.keyA,
    agent,
    [
      'echo inside > ok.txt',
      'ln -s / root',
      'ln -s /proc/self/root procroot',
      'ln -s /etc/passwd pw',
      'ln -s /tmp tmplink',
      'ln -s ../../.. up',
      'mkdir -p d && ln -s /etc d/etc',
      'echo outside-secret > /tmp/outside.txt',
      'touch /tmp/.marker',
      'echo planted',
    ].join(' && '),
  );
  expect(text(r)).toBe('planted');
});

afterAll(async () => {
  await h?.close();
});

describe('host-side paths', () => {
  it('traversal in every path argument of every file tool stays inside the workspace', async () => {
    const calls: [string, string, Record<string, unknown>][] = [];
    TRAVERSALS.forEach((p, i) => {
      calls.push([`r${i}`, 'read', { file_path: p }]);
      calls.push([`w${i}`, 'write', { file_path: p, content: 'pwned' }]);
      calls.push([`e${i}`, 'edit', { file_path: p, old_string: 'root', new_string: 'pwned' }]);
      calls.push([`g${i}`, 'glob', { pattern: '*', path: p }]);
      calls.push([`s${i}`, 'grep', { pattern: 'root:', path: p }]);
      calls.push([`i${i}`, 'read_image', { file_path: p }]);
    });
    for (let i = 0; i < calls.length; i += 60) {
      const results = await h.calls(h.keyA, agent, calls.slice(i, i + 60));
      for (const r of results) {
        const all = JSON.stringify(r);
        expect(all, r.id).not.toMatch(PASSWD);
        expect(all, r.id).not.toMatch(/SANDBOX_|INTERNAL|\/work\/|node_modules/);
        if (r.id.startsWith('r') && r.ok) expect(text(r)).not.toContain('pwned');
      }
    }
    expect(await strayFiles()).toBe('');
  });

  it('traversal in /files and /archive paths never reads or writes outside the workspace and never fails with a 5xx', async () => {
    for (const p of TRAVERSALS) {
      const q = encodeURIComponent(p);
      const get = await h.http(h.keyA, 'GET', `/v1/agents/${agent}/files?path=${q}`);
      // Some payloads are odd but legal names inside the workspace (`....`, `%2e%2e%2f…`), which
      // the previous test wrote; what matters is that nothing outside is ever returned.
      expect(get.status, p).toBeLessThan(500);
      if (get.status === 200) expect(get.text, p).toBe('pwned');
      else
        expect(get.json.error.code, p).toMatch(
          /PATH_OUTSIDE_WORKSPACE|FILE_NOT_FOUND|NOT_A_FILE|BAD_REQUEST/,
        );
      expect(get.text).not.toMatch(PASSWD);
      const put = await h.http(h.keyA, 'PUT', `/v1/agents/${agent}/files?path=${q}`, 'pwned', {
        'Content-Type': 'application/octet-stream',
      });
      expect(put.status, p).toBeLessThan(500);
      const down = await h.http(h.keyA, 'GET', `/v1/agents/${agent}/archive?path=${q}`);
      expect(down.status, p).toBeLessThan(500);
      expect(Buffer.from(down.buf).toString('latin1')).not.toMatch(PASSWD);
      const up = await h.http(
        h.keyA,
        'PUT',
        `/v1/agents/${agent}/archive?path=${q}`,
        await tarOf([{ header: { name: 'evil.txt' }, body: 'pwned' }]),
        { 'Content-Type': 'application/x-tar' },
      );
      expect(up.status, p).toBeLessThan(500);
    }
    // Raw (unencoded) dot segments in the query and a path-style traversal in the URL itself.
    const raw = await h.http(h.keyA, 'GET', `/v1/agents/${agent}/files?path=../../etc/passwd`);
    expect(raw.status).toBe(400);
    const inUrl = await h.http(h.keyA, 'GET', `/v1/agents/${agent}/../../../etc/passwd`);
    expect(inUrl.text).not.toMatch(PASSWD);
    expect(await strayFiles()).toBe('');
  });

  it('symlinks planted by bash never lead the tools outside the workspace', async () => {
    const via = [
      'root/etc/passwd',
      'procroot/etc/passwd',
      'pw',
      'up/etc/passwd',
      'd/etc/passwd',
      'tmplink/outside.txt',
    ];
    const calls: [string, string, Record<string, unknown>][] = [];
    via.forEach((p, i) => {
      calls.push([`r${i}`, 'read', { file_path: p }]);
      calls.push([`e${i}`, 'edit', { file_path: p, old_string: 'root', new_string: 'pwned' }]);
      calls.push([`w${i}`, 'write', { file_path: p, content: 'pwned' }]);
      calls.push([`s${i}`, 'grep', { pattern: 'root:|outside-secret', path: p }]);
    });
    calls.push(['gall', 'grep', { pattern: 'root:x:0:0|outside-secret' }]);
    calls.push(['jo', 'job_output', { job_id: '../../../../etc/passwd' }]);
    calls.push(['jk', 'job_kill', { job_id: '../../../../proc/1' }]);
    calls.push(['glob', 'glob', { pattern: '**/passwd' }]);
    const results = await h.calls(h.keyA, agent, calls);
    for (const r of results) {
      expect(JSON.stringify(r), r.id).not.toMatch(PASSWD);
      expect(JSON.stringify(r), r.id).not.toContain('outside-secret');
    }
    const check: Loose = await h.bash(
      h.keyA,
      agent,
      'cat /tmp/outside.txt; grep -c pwned /etc/passwd || true',
    );
    expect(text(check)).toBe('outside-secret\n0');
    expect(await strayFiles()).toBe('');
  });

  it('symlinks planted by bash never lead /files or /archive outside the workspace', async () => {
    for (const p of [
      'root/etc/passwd',
      'procroot/etc/passwd',
      'pw',
      'up/etc/passwd',
      'd/etc/passwd',
      'tmplink/outside.txt',
    ]) {
      const get = await h.http(h.keyA, 'GET', `/v1/agents/${agent}/files?path=${encodeURIComponent(p)}`);
      expect(get.status, p).toBe(400);
      expect(get.json.error.code).toBe('PATH_OUTSIDE_WORKSPACE');
      const put = await h.http(
        h.keyA,
        'PUT',
        `/v1/agents/${agent}/files?path=${encodeURIComponent(p)}`,
        'pwned',
        {
          'Content-Type': 'application/octet-stream',
        },
      );
      expect(put.status, p).toBe(400);
    }
    for (const p of ['root', 'procroot', 'up', 'd/etc', 'tmplink']) {
      const down = await h.http(h.keyA, 'GET', `/v1/agents/${agent}/archive?path=${p}`);
      expect(down.status, p).toBeGreaterThanOrEqual(400);
      expect(Buffer.from(down.buf).toString('latin1')).not.toMatch(PASSWD);
      const up = await h.http(
        h.keyA,
        'PUT',
        `/v1/agents/${agent}/archive?path=${p}`,
        await tarOf([{ header: { name: 'evil.txt' }, body: 'pwned' }]),
        { 'Content-Type': 'application/x-tar' },
      );
      expect(up.status, p).toBeGreaterThanOrEqual(400);
    }
    // Download of the whole workspace: only files and directories, nothing from outside.
    const all = await h.http(h.keyA, 'GET', `/v1/agents/${agent}/archive?path=.`);
    expect(all.status).toBe(200);
    const entries = await tarEntries(all.buf);
    expect(entries.filter((e) => e.type !== 'file' && e.type !== 'directory')).toEqual([]);
    expect(entries.some((e) => e.name.endsWith('ok.txt'))).toBe(true);
    expect(Buffer.from(all.buf).toString('latin1')).not.toMatch(PASSWD);
    expect(Buffer.from(all.buf).toString('latin1')).not.toContain('outside-secret');
    // Two-step: an archive that goes through a planted link is refused.
    const two = await h.http(
      h.keyA,
      'PUT',
      `/v1/agents/${agent}/archive?path=.`,
      await tarOf([{ header: { name: 'tmplink/evil.txt' }, body: 'pwned' }]),
      { 'Content-Type': 'application/x-tar' },
    );
    expect(two.status).toBe(400);
    expect(await strayFiles()).toBe('');
  });

  it('hostile tar uploads are rejected as a whole with ARCHIVE_REJECTED or FILE_TOO_LARGE, writing nothing', async () => {
    const good = { header: { name: 'fine/good.txt' }, body: 'good' };
    const hostile: [string, { header: Record<string, unknown>; body?: string }[], string][] = [
      ['dotdot', [good, { header: { name: '../escape.txt' }, body: 'x' }], 'ARCHIVE_REJECTED'],
      ['nested dotdot', [good, { header: { name: 'a/../../escape.txt' }, body: 'x' }], 'ARCHIVE_REJECTED'],
      ['absolute', [good, { header: { name: '/etc/escape.txt' }, body: 'x' }], 'ARCHIVE_REJECTED'],
      [
        'symlink',
        [good, { header: { name: 'link', type: 'symlink', linkname: '/etc' } }],
        'ARCHIVE_REJECTED',
      ],
      [
        'symlink then write through it',
        [
          { header: { name: 'l2', type: 'symlink', linkname: '../../..' } },
          { header: { name: 'l2/tmp/x' }, body: 'x' },
        ],
        'ARCHIVE_REJECTED',
      ],
      [
        'hardlink',
        [good, { header: { name: 'hl', type: 'link', linkname: '/etc/passwd' } }],
        'ARCHIVE_REJECTED',
      ],
      [
        'char device',
        [good, { header: { name: 'null', type: 'character-device', devmajor: 1, devminor: 3 } }],
        'ARCHIVE_REJECTED',
      ],
      [
        'block device',
        [good, { header: { name: 'sda', type: 'block-device', devmajor: 8, devminor: 0 } }],
        'ARCHIVE_REJECTED',
      ],
      ['fifo', [good, { header: { name: 'fifo', type: 'fifo' } }], 'ARCHIVE_REJECTED'],
      [
        'PAX long name with ..',
        [good, { header: { name: `${'p/'.repeat(80)}${'../'.repeat(90)}escape.txt` }, body: 'x' }],
        'ARCHIVE_REJECTED',
      ],
      [
        'PAX path override',
        [good, { header: { name: 'innocent.txt', pax: { path: '../../escape.txt' } }, body: 'x' }],
        'ARCHIVE_REJECTED',
      ],
      [
        'over-long component',
        [good, { header: { name: `${'n'.repeat(300)}.txt` }, body: 'x' }],
        'ARCHIVE_REJECTED',
      ],
      [
        'NUL in name (PAX)',
        [good, { header: { name: 'ok.txt', pax: { path: 'ok\u0000/../../escape.txt' } }, body: 'x' }],
        'ARCHIVE_REJECTED',
      ],
    ];
    for (const [label, entries, code] of hostile) {
      const res = await h.http(
        h.keyA,
        'PUT',
        `/v1/agents/${agent}/archive?path=up-${label.replace(/\W/g, '')}`,
        await tarOf(entries),
        {
          'Content-Type': 'application/x-tar',
        },
      );
      expect(res.status, label).toBe(400);
      expect(res.json.error.code, label).toBe(code);
      expect(res.text, label).not.toMatch(/\/work\/|node_modules|\n\s+at /);
    }
    const garbage = await h.http(
      h.keyA,
      'PUT',
      `/v1/agents/${agent}/archive?path=up-garbage`,
      new Uint8Array(4096).fill(0x41),
      {
        'Content-Type': 'application/x-tar',
      },
    );
    expect(garbage.json?.error?.code).toBe('ARCHIVE_REJECTED');
    const r: Loose = await h.bash(
      h.keyA,
      agent,
      'ls -d up-* fine escape.txt ../escape.txt /etc/escape.txt 2>/dev/null | wc -l',
    );
    expect(text(r)).toBe('0');
    expect(await strayFiles()).toBe('');
  });

  it('a tar bomb (a huge declared size, or more entries than allowed) is refused before it is written', async () => {
    // A header that declares 10 GiB, followed by only a little data.
    const header = Buffer.from(await tarOf([{ header: { name: 'bomb.bin', size: 1 }, body: 'x' }])).subarray(
      0,
      512,
    );
    const big = Buffer.from(header);
    big.write('\u0080', 124, 'latin1'); // base-256 size field
    big.fill(0, 125, 136);
    big.writeUIntBE(10 * 1024 ** 3, 130, 6);
    let sum = 0;
    big.fill(0x20, 148, 156);
    for (const b of big) sum += b;
    big.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 'latin1');
    const bomb = Buffer.concat([big, Buffer.alloc(64 * 1024)]);
    const res = await h.http(h.keyA, 'PUT', `/v1/agents/${agent}/archive?path=bomb`, new Uint8Array(bomb), {
      'Content-Type': 'application/x-tar',
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(['FILE_TOO_LARGE', 'ARCHIVE_REJECTED', 'PAYLOAD_TOO_LARGE']).toContain(res.json.error.code);
    // Many entries: 110 000 empty files (about 56 MB of headers).
    const many = Buffer.alloc(110_000 * 512 + 1024);
    const one = Buffer.from(await tarOf([{ header: { name: 'f', size: 0 }, body: '' }])).subarray(0, 512);
    for (let i = 0; i < 110_000; i++) {
      const hdr = Buffer.from(one);
      hdr.fill(0, 0, 100);
      hdr.write(`m/${i}`, 0, 'latin1');
      hdr.fill(0x20, 148, 156);
      let s = 0;
      for (const b of hdr) s += b;
      hdr.write(`${s.toString(8).padStart(6, '0')}\u0000 `, 148, 'latin1');
      hdr.copy(many, i * 512);
    }
    const manyRes = await h.http(
      h.keyA,
      'PUT',
      `/v1/agents/${agent}/archive?path=many`,
      new Uint8Array(many),
      {
        'Content-Type': 'application/x-tar',
      },
    );
    expect(manyRes.status).toBeGreaterThanOrEqual(400);
    expect(manyRes.status).toBeLessThan(500);
    const r: Loose = await h.bash(h.keyA, agent, 'ls -d bomb many 2>/dev/null | wc -l');
    expect(text(r)).toBe('0');
    expect((await h.http(undefined, 'GET', '/v1/health')).status).toBe(200);
  });
});
