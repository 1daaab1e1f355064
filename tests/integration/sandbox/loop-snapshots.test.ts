// Snapshots of loop workspaces at the store (host/sandbox/docker/workspaces/loop-snapshots.ts),
// as root with real loop devices (skipped where the service could not use them either): a
// snapshot of a mounted workspace is a sparse copy that a new workspace starts from, with its
// files and none written after; a size other than the snapshot's and hostile ids are refused; an
// instance's snapshot (a node agent's forInstance) makes a workspace for that instance alone;
// a workspace a dead process left frozen is thawed by the next adoption's sweep, and the temporary
// file of a copy a dead process left half made is removed by it (one written lately is not).
import { execFile } from 'node:child_process';
import { readdir, readFile, rm, rmdir, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { nanoid } from 'nanoid';
import { afterAll, describe, expect, it } from 'vitest';
import { createLoopWorkspaces } from '../../../host/sandbox/docker/index.ts';
import { loopWorkspaces } from './fixtures.ts';

const sh = promisify(execFile);
const dir = join(
  tmpdir(),
  `dsh-ws-snap-${nanoid(8)
    .toLowerCase()
    .replace(/[^a-z0-9]/g, 'x')}`,
);
const MiB = 1024 * 1024;

afterAll(async () => {
  // Never leave a frozen file system behind (its writers could not even be killed).
  await sh('fsfreeze', ['--unfreeze', join(dir, 'ws-frozen')]).catch(() => undefined);
  await createLoopWorkspaces(dir).sweep([], true);
  await rmdir(dir).catch(() => {});
});

describe.skipIf(!loopWorkspaces)('loop workspace snapshots', () => {
  it('copies a workspace sparse; a workspace made from it has its files and none written after', async () => {
    const store = createLoopWorkspaces(dir);
    const made = await store.create('ws-a', 64 * MiB, {});
    const mount = { type: 'bind', source: made.Source as string };
    await writeFile(join(mount.source, 'a.txt'), 'before');
    const taken = await store.snapshot?.(mount, 'snap_a');
    expect(taken?.sizeBytes).toBe(64 * MiB);
    expect(taken?.bytes).toBeLessThan(64 * MiB);
    expect((await stat(join(dir, '.snapshots', 'snap_a.img'))).size).toBe(64 * MiB);
    await writeFile(join(mount.source, 'a.txt'), 'after');
    const forked = await store.create('ws-b', 64 * MiB, {}, undefined, 'snap_a');
    expect(await readFile(join(forked.Source as string, 'a.txt'), 'utf8')).toBe('before');
    await expect(store.create('ws-c', 128 * MiB, {}, undefined, 'snap_a')).rejects.toMatchObject({
      code: 'INVALID_ARGUMENTS',
    });
    for (const id of ['../x', '.snapshots', 'a/b', ''])
      await expect(store.snapshot?.(mount, id)).rejects.toMatchObject({ code: 'INVALID_ARGUMENTS' });
    await store.dropSnapshot?.('snap_a');
    await expect(store.create('ws-d', 64 * MiB, {}, undefined, 'snap_a')).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
  });

  it("makes a workspace from an instance's snapshot for that instance alone", async () => {
    const store = createLoopWorkspaces(dir);
    const [a, b] = [store.forInstance?.('insta'), store.forInstance?.('instb')];
    const made = await store.create('ws-inst', 32 * MiB, {});
    const mount = { type: 'bind', source: made.Source as string };
    await writeFile(join(mount.source, 'a.txt'), 'of instance a');
    await a?.snapshot?.(mount, 'snap_inst');
    expect((await stat(join(dir, '.snapshots', 'insta', 'snap_inst.img'))).size).toBe(32 * MiB);
    await expect(b?.create('ws-inst-b', 32 * MiB, {}, undefined, 'snap_inst')).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    await expect(store.create('ws-inst-e', 32 * MiB, {}, undefined, 'snap_inst')).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    const copy = await a?.create('ws-inst-a', 32 * MiB, {}, undefined, 'snap_inst');
    expect(await readFile(join(copy?.Source as string, 'a.txt'), 'utf8')).toBe('of instance a');
    await a?.dropSnapshot?.('snap_inst');
    await rmdir(join(dir, '.snapshots', 'insta'));
  });

  it('thaws at adoption a workspace a dead process left frozen', async () => {
    const store = createLoopWorkspaces(dir);
    const made = await store.create('ws-frozen', 32 * MiB, {});
    const mount = { type: 'bind', source: made.Source as string };
    await sh('fsfreeze', ['--freeze', mount.source]);
    // Frozen: freezing again is refused (a write would wait in the kernel, unkillable, until a thaw).
    await expect(sh('fsfreeze', ['--freeze', mount.source])).rejects.toThrow();
    await createLoopWorkspaces(dir).sweep([mount]);
    // Thawed: it freezes again (and is thawed at once) before anything writes to it here.
    await sh('fsfreeze', ['--freeze', mount.source]);
    await sh('fsfreeze', ['--unfreeze', mount.source]);
    await writeFile(join(mount.source, 'g'), 'y');
    expect(await readFile(join(mount.source, 'g'), 'utf8')).toBe('y');
  });

  it("removes at adoption the temporary file of a snapshot a dead process was copying, not a fresh one's", async () => {
    const store = createLoopWorkspaces(dir);
    const made = await store.create('ws-temp', 32 * MiB, {});
    const mount = { type: 'bind', source: made.Source as string };
    await store.snapshot?.(mount, 'snap_kept');
    // What a process killed mid-copy leaves: `<id>.tmp`, untouched since; and a copy being made now.
    const crashed = join(dir, '.snapshots', 'snap_crashed.tmp');
    const fresh = join(dir, '.snapshots', 'snap_fresh.tmp');
    await writeFile(crashed, Buffer.alloc(64 * 1024, 1));
    const anHourAgo = new Date(Date.now() - 3_600_000);
    await utimes(crashed, anHourAgo, anHourAgo);
    await writeFile(fresh, Buffer.alloc(64 * 1024, 2));
    // A hostile name in the folder is not a snapshot's: left as it is.
    const odd = join(dir, '.snapshots', '..odd.tmp');
    await writeFile(odd, 'x');
    await utimes(odd, anHourAgo, anHourAgo);
    // The next process's adoption.
    await createLoopWorkspaces(dir).sweep([mount]);
    expect((await readdir(join(dir, '.snapshots'))).sort()).toEqual([
      '..odd.tmp',
      'snap_fresh.tmp',
      'snap_kept.img',
    ]);
    for (const file of [fresh, odd]) await rm(file);
    await store.dropSnapshot?.('snap_kept');
  });
});
