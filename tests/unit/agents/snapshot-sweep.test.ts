// The start's sweep of snapshot files no record names (host/agents/service/snapshot-sweep.ts over
// the loop store's sweepSnapshots): files a process that died left behind (a `snap_*` made but
// never recorded, a `ckpt_*` no checkpoint index holds, a `fork_*` never dropped) are removed; a
// snapshot a row names (any tenant's), one a checkpoint holds, and one written lately (maybe being
// made) stay. A root outside the data directory (maybe another instance's) and an index that
// cannot be read remove nothing; an instance's folder within the flat one (a node agent's) is
// never read.
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sweepOrphanSnapshots } from '../../../host/agents/service/snapshot-sweep.ts';
import { createLoopWorkspaces } from '../../../host/sandbox/docker/workspaces/loop.ts';
import { createSnapshotStore, type SnapshotStore } from '../../../host/store/snapshots.ts';
import { createTenantStore } from '../../../host/store/tenants.ts';
import { tempDatabase } from '../store/harness.ts';

const HOUR_AGO = (Date.now() - 3_600_000) / 1000;

describe('the sweep of snapshot files no record names', () => {
  let dataDir: string;
  let database: ReturnType<typeof tempDatabase>;
  let snapshots: SnapshotStore;
  const workspacesDir = () => join(dataDir, 'workspaces');
  const checkpointDir = () => join(dataDir, 'checkpoints');
  const fileOf = (name: string, root = workspacesDir()) => join(root, '.snapshots', name);

  /** A snapshot file as a process left it, written an hour ago unless `fresh`. */
  const plant = (name: string, { fresh = false, root = workspacesDir() } = {}) => {
    mkdirSync(join(root, '.snapshots'), { recursive: true });
    writeFileSync(fileOf(name, root), 'image');
    if (!fresh) utimesSync(fileOf(name, root), HOUR_AGO, HOUR_AGO);
  };
  const holdInIndex = (agentId: string, index: unknown) => {
    mkdirSync(join(checkpointDir(), agentId), { recursive: true });
    writeFileSync(join(checkpointDir(), agentId, 'index.json'), JSON.stringify(index));
  };
  const entry = (seq: number, snapshotId?: string) => ({
    callId: `c${seq}`,
    tool: 'bash',
    seq,
    at: 1,
    files: [],
    bytes: 0,
    ...(snapshotId === undefined ? {} : { snapshot: { id: snapshotId, node: 'local', sizeBytes: 1 } }),
  });
  /** What the start runs, over a loop store on `root`. */
  const sweep = (root = workspacesDir()) =>
    sweepOrphanSnapshots({
      sweep: createLoopWorkspaces(root).sweepSnapshots,
      snapshots,
      dataDir,
      workspacesDir: root,
      checkpointDir: checkpointDir(),
    });

  beforeEach(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'dsh-sweep-'));
    database = tempDatabase();
    const db = database.connect();
    snapshots = createSnapshotStore(db);
    const tenants = createTenantStore(db);
    for (const [name, id] of [
      ['a', 'snap_recorded_a'],
      ['b', 'snap_recorded_b'],
    ] as const) {
      const tenantId = (await tenants.createTenant(name)).id;
      await snapshots.add({
        id,
        tenantId,
        agentId: 'x',
        node: 'local',
        sizeBytes: 1,
        bytes: 1,
        createdAt: 1,
      });
    }
  });
  afterEach(() => {
    database.cleanup();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('removes the orphans a crash left and keeps every recorded or recent one', async () => {
    for (const name of ['snap_recorded_a', 'snap_recorded_b', 'ckpt_held', 'ckpt_held2'])
      plant(`${name}.img`);
    for (const name of ['snap_orphan', 'ckpt_orphan', 'fork_orphan']) plant(`${name}.img`);
    plant('snap_fresh.img', { fresh: true }); // being made: its row is not written yet
    plant('snap_copying.tmp'); // a copy's temporary file: the adoption's sweepTemps judges it
    plant('..img'); // not a snapshot name: never touched
    plant('notes.txt');
    holdInIndex('agent-1', { seq: 2, entries: [entry(1, 'ckpt_held'), entry(2)], dropped: [] });
    holdInIndex('agent-2', { seq: 1, entries: [entry(1, 'ckpt_held2')], dropped: [] });
    mkdirSync(join(checkpointDir(), 'agent-3')); // an agent with no index yet
    writeFileSync(join(checkpointDir(), 'stray'), 'not a folder');

    const done = await sweep();
    expect(done.kind === 'swept' && [...done.removed].sort()).toEqual([
      'ckpt_orphan',
      'fork_orphan',
      'snap_orphan',
    ]);
    for (const name of ['snap_orphan', 'ckpt_orphan', 'fork_orphan'])
      expect(existsSync(fileOf(`${name}.img`)), name).toBe(false);
    for (const name of [
      'snap_recorded_a.img',
      'snap_recorded_b.img',
      'ckpt_held.img',
      'ckpt_held2.img',
      'snap_fresh.img',
      'snap_copying.tmp',
      '..img',
      'notes.txt',
    ])
      expect(existsSync(fileOf(name)), name).toBe(true);
    // A second start finds nothing more to remove.
    expect(await sweep()).toEqual({ kind: 'swept', removed: [] });
  });

  it('removes nothing when a checkpoint index cannot be read', async () => {
    plant('ckpt_orphan.img');
    plant('snap_orphan.img');
    holdInIndex('agent-1', { seq: 1, entries: [entry(1, 'ckpt_orphan')], dropped: [] });
    mkdirSync(join(checkpointDir(), 'agent-2'));
    writeFileSync(join(checkpointDir(), 'agent-2', 'index.json'), '{"entries": [');
    await expect(sweep()).rejects.toThrow();
    expect(existsSync(fileOf('ckpt_orphan.img'))).toBe(true);
    expect(existsSync(fileOf('snap_orphan.img'))).toBe(true);
  });

  it("never sweeps a root outside the data directory (another instance's, maybe)", async () => {
    const shared = mkdtempSync(join(tmpdir(), 'dsh-shared-workspaces-'));
    try {
      plant('snap_other_instance.img', { root: shared });
      const done = await sweep(shared);
      expect(done.kind).toBe('skipped');
      expect(existsSync(fileOf('snap_other_instance.img', shared))).toBe(true);
    } finally {
      rmSync(shared, { recursive: true, force: true });
    }
  });

  it("never reads an instance's folder of a node agent within the flat one", async () => {
    // What a node agent over the same root keeps for an instance (loop-snapshots.ts snapshotFolder).
    mkdirSync(join(workspacesDir(), '.snapshots', '3f9c0a17b2e4'), { recursive: true });
    plant('3f9c0a17b2e4/snap_of_an_instance.img');
    plant('3f9c0a17b2e4/snap_copying.tmp');
    utimesSync(fileOf('3f9c0a17b2e4'), HOUR_AGO, HOUR_AGO);
    plant('snap_orphan.img');
    expect(await sweep()).toEqual({ kind: 'swept', removed: ['snap_orphan'] });
    expect(existsSync(fileOf('3f9c0a17b2e4/snap_of_an_instance.img'))).toBe(true);
    expect(existsSync(fileOf('3f9c0a17b2e4/snap_copying.tmp'))).toBe(true);
  });

  it('has nothing to do without a snapshot folder', async () => {
    expect(await sweep()).toEqual({ kind: 'swept', removed: [] });
  });
});
