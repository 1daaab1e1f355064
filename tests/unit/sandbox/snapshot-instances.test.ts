// A node agent's snapshots belong to the control-plane instance that took them (docs/nodes.md,
// "Snapshots of several instances"): over one loop workspace store in a temporary folder, as the
// node agent gives it to each instance's node (serve-node.ts instanceWorkspaces), instance B
// cannot make a workspace from A's snapshot (NOT_FOUND, as for an id nobody took), overwrite it
// by snapshotting under its id, or drop it, nor sweep its temporary files; A still can. The
// embedded store of `npm start` keeps `.snapshots/<id>.img` as before, and sees no instance's.
// Files an older node agent left flat are served to no instance until `node snapshots assign`
// moves each into its instance's folder, never over a file there.
// No loop device is needed: a snapshot of a workspace that is not mounted is a copy of its image
// file, and every refusal here comes before a workspace would be made.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runNodeCommand } from '../../../host/cli-node.ts';
import { loadConfig } from '../../../host/config.ts';
import { createLoopWorkspaces } from '../../../host/sandbox/docker/workspaces/loop.ts';
import { createVolumeWorkspaces } from '../../../host/sandbox/docker/workspaces/volume.ts';
import type { WorkspaceStore } from '../../../host/sandbox/docker/workspaces.ts';
import { instanceWorkspaces } from '../../../host/serve-node.ts';

const MiB = 1024 * 1024;
const HOUR_AGO = (Date.now() - 3_600_000) / 1000;

let root: string;
let store: WorkspaceStore;
let a: WorkspaceStore;
let b: WorkspaceStore;

/** A workspace image (not a file system: only copied here) whose first bytes say `marker`, sparse to 16 MiB. */
const workspace = (name: string, marker: string) => {
  const image = join(root, `${name}.img`);
  writeFileSync(image, marker);
  truncateSync(image, 16 * MiB);
  return { type: 'bind', source: join(root, name) };
};
const snapshotOf = (id: string, instance?: string) =>
  join(root, '.snapshots', ...(instance === undefined ? [] : [instance]), `${id}.img`);
const markerOf = (file: string) => readFileSync(file).subarray(0, 8).toString();
/** A workspace made from snapshot `id` of `from`'s, with its size: what ensure({fromSnapshot}) asks. */
const restore = (from: WorkspaceStore, id: string, bytes = 16 * MiB) =>
  from.create(`ws-new-${id}`, bytes, {}, undefined, id);

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'dsh-snap-instances-'));
  store = createLoopWorkspaces(root, { freeBytes: async () => 1024 ** 4 });
  a = instanceWorkspaces(store, 'insta');
  b = instanceWorkspaces(store, 'instb');
});

afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("an instance's snapshots on a node agent", () => {
  it('are found by their instance alone: another cannot restore, overwrite or drop them', async () => {
    await a.snapshot?.(workspace('ws-a', 'AAAAAAAA'), 'snap_1');
    expect(markerOf(snapshotOf('snap_1', 'insta'))).toBe('AAAAAAAA');
    // B: as if no snapshot snap_1 existed, with nothing made.
    const unknown = await restore(b, 'snap_never').catch((e: unknown) => e);
    const foreign = await restore(b, 'snap_1').catch((e: unknown) => e);
    expect(foreign).toMatchObject({ code: 'NOT_FOUND', data: { snapshot: 'snap_1' } });
    expect((foreign as Error).message).toBe((unknown as Error).message.replace('snap_never', 'snap_1'));
    expect(existsSync(join(root, 'ws-new-snap_1.img'))).toBe(false);
    // B's drop is a no-op on A's file (as on any id B does not hold).
    await b.dropSnapshot?.('snap_1');
    expect(existsSync(snapshotOf('snap_1', 'insta'))).toBe(true);
    // B's snapshot under the same id is B's own file; A's is untouched.
    await b.snapshot?.(workspace('ws-b', 'BBBBBBBB'), 'snap_1');
    expect(markerOf(snapshotOf('snap_1', 'insta'))).toBe('AAAAAAAA');
    expect(markerOf(snapshotOf('snap_1', 'instb'))).toBe('BBBBBBBB');
    await b.dropSnapshot?.('snap_1');
    expect(existsSync(snapshotOf('snap_1', 'instb'))).toBe(false);
    expect(markerOf(snapshotOf('snap_1', 'insta'))).toBe('AAAAAAAA');
    // A still finds its own (the size check comes after the snapshot was found), and drops it.
    await expect(restore(a, 'snap_1', 32 * MiB)).rejects.toMatchObject({ code: 'INVALID_ARGUMENTS' });
    await a.dropSnapshot?.('snap_1');
    expect(existsSync(snapshotOf('snap_1', 'insta'))).toBe(false);
  });

  it("sweeps its own temporary files only, never another instance's or the flat folder's", async () => {
    for (const folder of ['insta', 'instb', '']) {
      mkdirSync(join(root, '.snapshots', folder), { recursive: true });
      writeFileSync(join(root, '.snapshots', folder, 'snap_t.tmp'), 'half');
      utimesSync(join(root, '.snapshots', folder, 'snap_t.tmp'), HOUR_AGO, HOUR_AGO);
    }
    // Its adoption's sweep (no workspace passes `only`: the temporary files alone).
    await b.sweep([], false, () => false);
    expect(existsSync(join(root, '.snapshots', 'instb', 'snap_t.tmp'))).toBe(false);
    expect(existsSync(join(root, '.snapshots', 'insta', 'snap_t.tmp'))).toBe(true);
    expect(existsSync(join(root, '.snapshots', 'snap_t.tmp'))).toBe(true);
  });

  it('refuse an instance that is not an instance id, and a store that cannot keep them apart is refused', () => {
    for (const bad of ['', '..', 'a/b', 'Upper', 'x.img', 'a'.repeat(17)])
      expect(() => instanceWorkspaces(store, bad)).toThrow(
        expect.objectContaining({ code: 'CONFIG_INVALID' }),
      );
    // Docker volumes keep no snapshots: shared as they are.
    const volumes = createVolumeWorkspaces({} as never);
    expect(instanceWorkspaces(volumes, 'insta')).toBe(volumes);
    const snapshotsButNoInstances = { ...store, forInstance: undefined };
    expect(() => instanceWorkspaces(snapshotsButNoInstances, 'insta')).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID' }),
    );
  });
});

describe('the embedded store of npm start', () => {
  it('keeps .snapshots/<id>.img as before, and no instance is served those files', async () => {
    await store.snapshot?.(workspace('ws-e', 'EEEEEEEE'), 'snap_e');
    expect(markerOf(snapshotOf('snap_e'))).toBe('EEEEEEEE');
    await expect(restore(store, 'snap_e', 32 * MiB)).rejects.toMatchObject({ code: 'INVALID_ARGUMENTS' });
    // An instance's view of the same root (a node agent over an older version's files) finds none.
    await expect(restore(a, 'snap_e')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await a.dropSnapshot?.('snap_e');
    expect(existsSync(snapshotOf('snap_e'))).toBe(true);
    // Nor does the flat store see an instance's.
    await a.snapshot?.(workspace('ws-a', 'AAAAAAAA'), 'snap_a');
    await expect(restore(store, 'snap_a')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await store.dropSnapshot?.('snap_a');
    expect(existsSync(snapshotOf('snap_a', 'insta'))).toBe(true);
  });

  it("the start's sweep of the flat folder never reads an instance's folder", async () => {
    await a.snapshot?.(workspace('ws-a', 'AAAAAAAA'), 'snap_a');
    await store.snapshot?.(workspace('ws-e', 'EEEEEEEE'), 'snap_e');
    for (const file of [snapshotOf('snap_a', 'insta'), snapshotOf('snap_e')])
      utimesSync(file, HOUR_AGO, HOUR_AGO);
    // No record names either: the flat one goes, the instance's stays.
    expect(await store.sweepSnapshots?.(async () => new Set())).toEqual(['snap_e']);
    expect(existsSync(snapshotOf('snap_a', 'insta'))).toBe(true);
  });
});

describe('node snapshots: the files an older node agent left flat', () => {
  const config = () => loadConfig({ dataDir: root, workspacesDir: root });
  const run = async (...args: string[]): Promise<unknown> => {
    const lines: string[] = [];
    expect(await runNodeCommand(config(), args, (line) => lines.push(line))).toBe(0);
    return JSON.parse(lines.join(''));
  };

  it('lists them; assign moves each into its instance, where that instance alone finds it', async () => {
    for (const id of ['snap_old1', 'snap_old2']) {
      mkdirSync(join(root, '.snapshots'), { recursive: true });
      writeFileSync(snapshotOf(id), Buffer.alloc(16 * MiB));
    }
    expect(await run('snapshots')).toEqual({ unassigned: ['snap_old1', 'snap_old2'] });
    expect(await run('snapshots', 'assign', 'insta', 'snap_old1')).toEqual({
      instance: 'insta',
      assigned: ['snap_old1'],
    });
    expect(await run('snapshots')).toEqual({ unassigned: ['snap_old2'] });
    await expect(restore(a, 'snap_old1', 32 * MiB)).rejects.toMatchObject({ code: 'INVALID_ARGUMENTS' });
    await expect(restore(b, 'snap_old1')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('never over a snapshot the instance has, nor an id that is not there: then nothing moves', async () => {
    await a.snapshot?.(workspace('ws-a', 'AAAAAAAA'), 'snap_1');
    mkdirSync(join(root, '.snapshots'), { recursive: true });
    writeFileSync(snapshotOf('snap_1'), 'OLDOLDOL');
    writeFileSync(snapshotOf('snap_2'), 'OLDOLDOL');
    const c = config();
    await expect(
      runNodeCommand(c, ['snapshots', 'assign', 'insta', 'snap_2', 'snap_1']),
    ).rejects.toMatchObject({
      code: 'CONFLICT',
    });
    await expect(runNodeCommand(c, ['snapshots', 'assign', 'insta', 'snap_2', 'nope'])).rejects.toMatchObject(
      {
        code: 'NOT_FOUND',
      },
    );
    await expect(runNodeCommand(c, ['snapshots', 'assign', '../x', 'snap_2'])).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
    });
    expect(markerOf(snapshotOf('snap_1', 'insta'))).toBe('AAAAAAAA');
    expect(existsSync(snapshotOf('snap_2'))).toBe(true);
    expect(existsSync(snapshotOf('snap_2', 'insta'))).toBe(false);
  });
});
