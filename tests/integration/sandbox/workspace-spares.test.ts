// Spare workspaces (loop store keepSpares): formatted images made ahead, so that a cold create only
// renames and mounts one. Each spare goes to one workspace only; one a crashed process left behind
// (whole or half-made) is never reused and is swept; spares count in disk admission and give way to
// a create that would not fit otherwise; a provider keeps them under its own instance's names.

import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nanoid } from 'nanoid';
import { afterEach, describe, expect, it } from 'vitest';
import { createLoopWorkspaces, type WorkspaceStore } from '../../../host/sandbox/docker/index.ts';
import { codeOf } from '../../contract/sandbox/suite.ts';
import { dockerFixture, loopWorkspaces } from './fixtures.ts';

const MiB = 1024 * 1024;
const SIZE = 64 * MiB;
const run = nanoid(6)
  .toLowerCase()
  .replace(/[^a-z0-9]/g, 'x');
let n = 0;
const stores: Array<{ store: WorkspaceStore; dir: string }> = [];

/** A store over a fresh folder of this run (or over `dir`: another process on the same folder). */
const open = (options: Parameters<typeof createLoopWorkspaces>[1] = {}, dir?: string) => {
  const at = dir ?? join(tmpdir(), `dsh-spares-${run}-${n++}`);
  const store = createLoopWorkspaces(at, options);
  stores.push({ store, dir: at });
  return { store, dir: at };
};
const spareFiles = (dir: string, prefix: string): string[] =>
  existsSync(dir)
    ? readdirSync(dir).filter((f) => f.startsWith(`${prefix}-spare-`) && f.endsWith('.img'))
    : [];
/** What the agent would see: the file system's size, its root's owner, and its entries. */
const inside = (dir: string) => {
  const size = Number(execFileSync('df', ['--output=size', '-B1', dir], { encoding: 'utf8' }).split('\n')[1]);
  return { size, owner: statSync(dir).uid, entries: readdirSync(dir) };
};

afterEach(async () => {
  for (const { store, dir } of stores.splice(0)) {
    await store.dropSpares?.('p');
    await store.sweep([], true);
    if (existsSync(dir)) rmdirSync(dir);
  }
});

describe.skipIf(!loopWorkspaces)('spare workspaces (loop store)', () => {
  it('makes spares ahead; a create of their size and prefix takes one, empty and the agent’s, and it is refilled', async () => {
    const { store, dir } = open();
    const errors: unknown[] = [];
    store.keepSpares?.('p', SIZE, 2, (e) => errors.push(e));
    await store.sparesFilled?.('p');
    const before = spareFiles(dir, 'p');
    expect(before).toHaveLength(2);
    const mount = await store.create('p-agent-a-ws', SIZE, {});
    // One of the spares became this workspace (the other is still there, a new one on its way).
    expect(spareFiles(dir, 'p').filter((f) => before.includes(f))).toHaveLength(1);
    const seen = inside(mount.Source ?? '');
    expect(seen.owner).toBe(1000);
    expect(seen.entries).toEqual([]);
    expect(seen.size).toBeGreaterThan(SIZE * 0.8);
    expect(seen.size).toBeLessThanOrEqual(SIZE);
    await store.sparesFilled?.('p');
    expect(spareFiles(dir, 'p')).toHaveLength(2);
    expect(errors).toEqual([]);
  });

  it('hands each spare to one workspace only, also to creates at once beyond the spares', async () => {
    const { store } = open();
    store.keepSpares?.('p', SIZE, 2, () => {});
    await store.sparesFilled?.('p');
    const made = await Promise.all([0, 1, 2, 3].map((i) => store.create(`p-agent-${i}-ws`, SIZE, {})));
    const images = made.map((m) => `${m.Source}.img`);
    expect(new Set(images).size).toBe(4);
    for (const image of images) expect(existsSync(image)).toBe(true);
    // Each is its own file system: a file written in one is in no other.
    writeFileSync(join(made[0]?.Source ?? '', 'mine'), 'x');
    for (const m of made.slice(1)) expect(readdirSync(m.Source ?? '')).toEqual([]);
    await store.sparesFilled?.('p');
  });

  it('makes a workspace of another size, or of another prefix, on demand and leaves the spares alone', async () => {
    const { store, dir } = open();
    store.keepSpares?.('p', SIZE, 1, () => {});
    await store.sparesFilled?.('p');
    const [spare] = spareFiles(dir, 'p');
    const other = await store.create('p-agent-big-ws', 2 * SIZE, {});
    const foreign = await store.create('q-agent-a-ws', SIZE, {});
    expect(spareFiles(dir, 'p')).toEqual([spare]);
    expect(inside(other.Source ?? '').size).toBeGreaterThan(SIZE);
    expect(inside(foreign.Source ?? '').entries).toEqual([]);
  });

  it('never reuses a spare another process left behind, whole or half-made, and the sweep of that prefix takes them', async () => {
    const first = open();
    first.store.keepSpares?.('p', SIZE, 1, () => {});
    await first.store.sparesFilled?.('p');
    const [left] = spareFiles(first.dir, 'p');
    // A crash in the middle of making one: an image of the right size that was never formatted.
    const half = join(first.dir, 'p-spare-halfmade000.img');
    writeFileSync(half, '');
    execFileSync('truncate', ['-s', String(SIZE), half]);
    // The next process on the same folder: its own spares only.
    const next = open({}, first.dir);
    next.store.keepSpares?.('p', SIZE, 1, () => {});
    await next.store.sparesFilled?.('p');
    const mount = await next.store.create('p-agent-a-ws', SIZE, {});
    expect(inside(mount.Source ?? '').entries).toEqual([]);
    expect(existsSync(join(first.dir, left ?? ''))).toBe(true);
    expect(existsSync(half)).toBe(true);
    // What adopt() does: sweep this prefix's workspaces no container uses (not the ones it made).
    await next.store.sweep([{ type: 'bind', source: mount.Source ?? '' }], false, (name) =>
      name.startsWith('p-'),
    );
    expect(existsSync(join(first.dir, left ?? ''))).toBe(false);
    expect(existsSync(half)).toBe(false);
    expect(existsSync(`${mount.Source}.img`)).toBe(true);
    await next.store.sparesFilled?.('p');
    expect(spareFiles(first.dir, 'p')).toHaveLength(1);
  });

  it('makes the workspace afresh when its spare was swept away meanwhile', async () => {
    const { store, dir } = open();
    store.keepSpares?.('p', SIZE, 1, () => {});
    await store.sparesFilled?.('p');
    await store.sweep([], true);
    expect(spareFiles(dir, 'p')).toEqual([]);
    const mount = await store.create('p-agent-a-ws', SIZE, {});
    expect(inside(mount.Source ?? '').entries).toEqual([]);
  });

  it('counts spares in disk admission; they give way to a create that would not fit otherwise', async () => {
    const dir = join(tmpdir(), `dsh-spares-${run}-${n++}`);
    execFileSync('mkdir', ['-p', dir]);
    // Room for exactly 4 × SIZE of workspace growth (the images are sparse: nothing is written),
    // whatever else writes to this disk meanwhile: its free bytes are fixed, as admission sees them.
    const { store } = open({ reserveBytes: 0, freeBytes: async () => 4 * SIZE }, dir);
    const errors: unknown[] = [];
    store.keepSpares?.('p', SIZE, 3, (e) => errors.push(e));
    await store.sparesFilled?.('p');
    expect(spareFiles(dir, 'p')).toHaveLength(3);
    // 2 × SIZE only fits once two spares are gone.
    await store.create('q-agent-big-ws', 2 * SIZE, {});
    expect(spareFiles(dir, 'p').length).toBeLessThanOrEqual(2);
    // The room left is counted with the spares still there: another 2 × SIZE does not fit...
    await store.sparesFilled?.('p');
    expect(await codeOf(store.create('q-agent-big2-ws', 2 * SIZE + MiB, {}))).toBe('CAPACITY_EXCEEDED');
    // ...and no room for a spare is not an error of its own.
    expect(errors).toEqual([]);
  });

  it("gives a tenant's further workspaces a spare only within its share, and keeps the spares for a newcomer", async () => {
    const { store, dir } = open({ reserveBytes: 0, freeBytes: async () => 8 * SIZE });
    store.keepSpares?.('p', SIZE, 2, () => {});
    await store.sparesFilled?.('p');
    // A quarter of the 8 × SIZE stays open for tenants that hold none: 6 further ones fit, not 7.
    for (const i of [1, 2, 3, 4, 5, 6])
      await store.create(`p-agent-a${i}-ws`, SIZE, {}, undefined, undefined, 'further');
    await store.sparesFilled?.('p');
    expect(spareFiles(dir, 'p')).toHaveLength(2);
    expect(await codeOf(store.create('p-agent-a7-ws', SIZE, {}, undefined, undefined, 'further'))).toBe(
      'CAPACITY_EXCEEDED',
    );
    expect(await codeOf(store.admitsFurther?.(SIZE) ?? Promise.resolve())).toBe('CAPACITY_EXCEEDED');
    expect(spareFiles(dir, 'p')).toHaveLength(2);
    // A newcomer's first takes a spare.
    const mount = await store.create('p-agent-b1-ws', SIZE, {});
    expect(inside(mount.Source ?? '').entries).toEqual([]);
  });

  it('removes its ready spares when told to drop them', async () => {
    const { store, dir } = open();
    store.keepSpares?.('p', SIZE, 2, () => {});
    await store.sparesFilled?.('p');
    await store.dropSpares?.('p');
    expect(spareFiles(dir, 'p')).toEqual([]);
    const mount = await store.create('p-agent-a-ws', SIZE, {});
    await store.sparesFilled?.('p');
    expect(spareFiles(dir, 'p')).toEqual([]);
    expect(inside(mount.Source ?? '').entries).toEqual([]);
  });
});

describe.skipIf(!loopWorkspaces)('a provider with spare workspaces', () => {
  const fx = dockerFixture();
  afterEach(async () => {
    await fx.sweep();
  });

  it('keeps them under its own instance’s names, gives a cold create one, and removes them when it closes', async () => {
    const provider = fx.provider({ workspaceSpares: 1 });
    const prefix = `dsht-${fx.runId}`;
    const dir = fx.workspacesDir ?? '';
    await fx.workspaces.sparesFilled?.(prefix);
    const [spare] = spareFiles(dir, prefix);
    expect(spare).toBeDefined();
    const sb = await provider.create({ tenantId: 't', agentId: 'a' });
    expect(existsSync(join(dir, spare ?? ''))).toBe(false);
    const r = await sb.exec(
      'stat -c %U /workspace && ls -A /workspace | wc -l && df -B1M --output=size /workspace | tail -1',
    );
    expect(
      r.stdout
        .trim()
        .split('\n')
        .map((l) => l.trim()),
    ).toEqual(['agent', '0', expect.stringMatching(/^\d+$/)]);
    await fx.workspaces.sparesFilled?.(prefix);
    expect(spareFiles(dir, prefix)).toHaveLength(1);
    await provider.close();
    expect(spareFiles(dir, prefix)).toEqual([]);
  });
});
