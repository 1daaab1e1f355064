// The one contract every WorkspaceStore passes (host/sandbox/docker/workspaces.ts): what the docker
// provider relies on when it makes, starts, re-adopts, replaces and removes an agent's /workspace.
// Each store runs it with a short test file: the volume store against an in-memory engine in
// tests/unit and against the real engine in tests/integration, the loop store (root, loop devices)
// in tests/integration.
// What only some stores can do is declared by the harness as data, as ProviderFlags is for
// sandboxes: `bounded` (create's bytes bound the workspace) and `owned` (the store can prove a
// workspace is its own, so it sweeps).

import { nanoid } from 'nanoid';
import { afterAll, describe, expect, it } from 'vitest';
import type { WorkspaceMount, WorkspaceStore } from '../../../host/sandbox/docker/workspaces.ts';
import { WORKSPACE_ROOT } from '../../../host/sandbox/paths.ts';
import { codeOf } from '../sandbox/suite.ts';

export interface WorkspaceHarness {
  /**
   * A store over this run's place. Called again, another object over the same place: what a
   * restarted control plane makes.
   */
  open(): WorkspaceStore;
  /** Labels every workspace of the run carries (the cleanup may remove by them). Default {}. */
  labels?: Record<string, string>;
  /**
   * create's bytes bound the workspace: limitOf and usage answer them, a workspace below the
   * minimum is refused, and ready() of a gone one fails instead of letting the container start on
   * something unbounded.
   */
  bounded: boolean;
  /** owns() proves a workspace is this store's, and sweep() removes the ones no container uses. */
  owned: boolean;
  /** After the suite: removes whatever the run left behind. */
  cleanup?: () => Promise<void>;
}

const MiB = 1024 * 1024;
/** Large enough for every store (a loop workspace holds an ext4 journal). */
const SIZE = 32 * MiB;

/** The mount a container gets, as `docker inspect` reports it back (workspaceOf). */
const asMount = (m: { Type?: string | undefined; Source?: string | undefined }): WorkspaceMount => ({
  type: m.Type ?? '',
  source: m.Source ?? '',
});

export const runWorkspaceContract = (
  name: string,
  harness: WorkspaceHarness,
  options: { skip?: boolean } = {},
): void => {
  describe.skipIf(options.skip ?? false)(`WorkspaceStore contract: ${name}`, () => {
    const run = nanoid(6)
      .toLowerCase()
      .replace(/[^a-z0-9]/g, 'x');
    let n = 0;
    /** A fresh workspace name of this run. */
    const fresh = (): string => `wsc-${run}-${n++}`;
    const ofRun = (name: string): boolean => name.startsWith(`wsc-${run}-`);
    const store = harness.open();
    const labels = harness.labels ?? {};
    const make = async (s: WorkspaceStore = store, bytes = SIZE): Promise<WorkspaceMount> =>
      asMount(await s.create(fresh(), bytes, labels));
    /** Mounts no store of this run made. */
    const foreign: WorkspaceMount[] = [
      { type: 'volume', source: `wsc-${run}-never-made` },
      { type: 'volume', source: '' },
      { type: 'bind', source: '/etc' },
      { type: 'bind', source: `/tmp/wsc-${run}-never-made` },
      { type: 'tmpfs', source: '' },
    ];

    afterAll(async () => {
      await harness.cleanup?.();
    });

    it('makes a workspace that a container mounts read-write at /workspace', async () => {
      const made = await store.create(fresh(), SIZE, labels);
      expect(made).toMatchObject({ Target: WORKSPACE_ROOT, ReadOnly: false });
      expect(['bind', 'volume']).toContain(made.Type);
      expect(made.Source).toBeTruthy();
      const mount = asMount(made);
      expect(await store.exists(mount)).toBe(true);
      await store.ready(mount);
      await store.ready(mount);
      expect(await store.exists(mount)).toBe(true);
    });

    it('makes workspaces side by side, each its own', async () => {
      const [a, b, c] = await Promise.all([make(), make(), make()]);
      expect(new Set([a.source, b.source, c.source]).size).toBe(3);
      for (const m of [a, b, c]) expect(await store.exists(m)).toBe(true);
      await store.remove(b);
      expect(await store.exists(a)).toBe(true);
      expect(await store.exists(c)).toBe(true);
    });

    it('removes a workspace; removing it again, or a mount that is not its own, is done', async () => {
      const mount = await make();
      await store.remove(mount);
      expect(await store.exists(mount)).toBe(false);
      await store.remove(mount);
      for (const m of foreign) await store.remove(m);
    });

    it('knows no workspace behind a mount it did not make, and claims none of them', async () => {
      for (const m of foreign) {
        expect(await store.exists(m), `${m.type}:${m.source}`).toBe(false);
        expect(store.owns(m), `${m.type}:${m.source}`).toBe(false);
        expect(await store.limitOf(m)).toBeUndefined();
        expect(await store.usage(m)).toBeUndefined();
      }
    });

    it('lets a restarted control plane take over a workspace whose container is gone', async () => {
      const mount = await make(store);
      const limit = await store.limitOf(mount);
      const restarted = harness.open();
      expect(await restarted.exists(mount)).toBe(true);
      await restarted.ready(mount);
      expect(await restarted.limitOf(mount)).toBe(limit);
      expect(restarted.owns(mount)).toBe(store.owns(mount));
      await restarted.remove(mount);
      expect(await store.exists(mount)).toBe(false);
    });

    if (harness.bounded) {
      it('bounds a workspace by the bytes it was made with, and reports its usage', async () => {
        const mount = await make(store, SIZE);
        expect(await store.limitOf(mount)).toBe(SIZE);
        const usage = await store.usage(mount);
        expect(usage?.limitBytes).toBeGreaterThan(SIZE / 2);
        expect(usage?.limitBytes).toBeLessThanOrEqual(SIZE);
        expect(usage?.usedBytes).toBeGreaterThanOrEqual(0);
        expect(usage?.usedBytes).toBeLessThan(usage?.limitBytes ?? 0);
      });

      it('refuses a workspace too small to hold a file system, or of no whole size', async () => {
        for (const bytes of [0, MiB, SIZE + 0.5, Number.NaN, -SIZE])
          expect(await codeOf(store.create(fresh(), bytes, labels)), String(bytes)).toBe('LIMIT_EXCEEDED');
      });

      it('refuses to ready a workspace that is gone', async () => {
        const mount = await make();
        await store.remove(mount);
        expect(await codeOf(store.ready(mount))).toBe('SANDBOX_UNAVAILABLE');
      });
    } else {
      it('states no limit and no usage: the workspace is unbounded', async () => {
        const mount = await make();
        expect(await store.limitOf(mount)).toBeUndefined();
        expect(await store.usage(mount)).toBeUndefined();
      });
    }

    if (harness.owned) {
      it('claims its own workspaces, also the ones an earlier process made', async () => {
        const mount = await make();
        expect(store.owns(mount)).toBe(true);
        expect(harness.open().owns(mount)).toBe(true);
      });

      it('sweeps what no container uses, never a kept one, one `only` refuses, or one it made', async () => {
        const kept = await make();
        const unused = await make();
        const refusedName = fresh();
        const refused = asMount(await store.create(refusedName, SIZE, labels));
        const restarted = harness.open();
        const mine = await make(restarted);
        const only = (name: string) => ofRun(name) && name !== refusedName;
        // Whatever else of this run is still there is unused too, so it goes as well.
        expect(await restarted.sweep([kept], false, only)).toBeGreaterThanOrEqual(1);
        expect(await store.exists(kept)).toBe(true);
        expect(await store.exists(unused)).toBe(false);
        expect(await store.exists(refused)).toBe(true);
        expect(await store.exists(mine)).toBe(true);
        // Tearing a run down (`all`) takes the ones it made too; nothing is left to sweep then.
        expect(await restarted.sweep([], true, ofRun)).toBeGreaterThanOrEqual(3);
        for (const m of [kept, refused, mine]) expect(await store.exists(m)).toBe(false);
        expect(await restarted.sweep([], true, ofRun)).toBe(0);
      });
    } else {
      it('proves no workspace its own, so it sweeps none', async () => {
        const mount = await make();
        expect(store.owns(mount)).toBe(false);
        expect(await harness.open().sweep([], true, ofRun)).toBe(0);
        expect(await store.sweep([], true)).toBe(0);
        expect(await store.exists(mount)).toBe(true);
      });
    }
  });
};
