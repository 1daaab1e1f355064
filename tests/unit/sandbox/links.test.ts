// The containers' link folders (host/sandbox/docker/links.ts): a sweep removes only folders no
// container mounts and that are old enough that no create in flight can be about to use them.
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { mkdir, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { makeLinkDir, sweepLinkDirs } from '../../../host/sandbox/docker/links.ts';

const links = mkdtempSync(join(tmpdir(), 'dsh-links-'));
afterAll(() => rmSync(links, { recursive: true, force: true }));

const listed = (source: string): Docker.ContainerInfo =>
  ({
    Mounts: [{ Destination: '/run/dsh-link', Source: source, Type: 'bind' }],
  }) as unknown as Docker.ContainerInfo;

describe('link folders', () => {
  it('are made searchable by the agent (0755) whatever the umask', async () => {
    const old = process.umask(0o077);
    try {
      const dir = await makeLinkDir(links);
      expect(statSync(dir).mode & 0o777).toBe(0o755);
    } finally {
      process.umask(old);
    }
  });

  it('are swept only when no container mounts them and they are old', async () => {
    const used = await makeLinkDir(links);
    const orphan = await makeLinkDir(links);
    const fresh = await makeLinkDir(links);
    const other = join(links, 'not-a-link-folder');
    await mkdir(other);
    const hourAgo = new Date(Date.now() - 60 * 60 * 1000);
    for (const dir of [used, orphan, other]) await utimes(dir, hourAgo, hourAgo);
    const removed = await sweepLinkDirs(links, [listed(used)]);
    expect(existsSync(orphan)).toBe(false);
    expect([used, fresh, other].every((d) => existsSync(d))).toBe(true);
    expect(removed).toBeGreaterThanOrEqual(1);
  });
});
