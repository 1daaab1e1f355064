// The workspace disk every tenant shares (docs/security.md, "Capacity all tenants share"): a tenant
// that holds workspaces on a node is admitted a further one only while a quarter of the admissible
// disk stays open for tenants that hold none, so tenants each within their own caps cannot take the
// whole disk and refuse another tenant's first agent. One tenant alone (the embedded default) still
// fills the disk. Two levels, neither with an engine or a loop device:
// - the node (provision.ts) over a fake engine and a fake disk of 256 MiB: which creates are a
//   tenant's further ones, cold and from the warm pool (a pooled sandbox is not handed to a tenant
//   over its share: the same refusal as a cold create);
// - the warm pool (pool.ts) at the node: one tenant's burst leaves a quarter of the ready pool to
//   a tenant that took none of the last takes;
// - the loop store's admission (loop-admission.ts) over sparse images in a temporary folder with a
//   fake free-bytes figure: the rule in bytes, atomic in the admission queue, ready spares open.
import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SandboxError } from '../../../host/errors.ts';
import { DOCKER_DEFAULT_LIMITS } from '../../../host/sandbox/docker/config.ts';
import type { NodeState } from '../../../host/sandbox/docker/node-state.ts';
import { naming } from '../../../host/sandbox/docker/ownership.ts';
import { createWarmPool, type PoolItem } from '../../../host/sandbox/docker/pool.ts';
import { ensureSandbox } from '../../../host/sandbox/docker/provision.ts';
import { runtimeCatalog } from '../../../host/sandbox/docker/runtimes.ts';
import {
  admitsFurther,
  admitted,
  sharesFairly,
} from '../../../host/sandbox/docker/workspaces/loop-admission.ts';
import type { LoopState } from '../../../host/sandbox/docker/workspaces/loop-state.ts';
import type { DiskShare, WorkspaceStore } from '../../../host/sandbox/docker/workspaces.ts';
import { echoPipe } from '../../helpers/echo-pipe.ts';

const MiB = 1024 * 1024;
const DISK = 256 * MiB;
const WS = 64 * MiB;
const INSTANCE = 'aaaa11112222';

const codeOf = (p: Promise<unknown>): Promise<string> =>
  p.then(
    () => 'ok',
    (e: unknown) => (e instanceof SandboxError ? e.code : String(e)),
  );

/**
 * A store over a fake disk of DISK bytes with the loop store's rule (nothing is written, so every
 * workspace may still grow to its limit): a workspace fits the open room, a further one also leaves
 * the reserve open, a first one takes at most the reserve. Records which creates were further ones.
 */
const fakeDisk = (disk = DISK) => {
  const held = new Map<string, number>();
  const further: string[] = [];
  const open = () => disk - [...held.values()].reduce((a, b) => a + b, 0);
  const check = (bytes: number, share?: DiskShare) => {
    if ((share !== undefined && !sharesFairly(share, open(), disk, bytes)) || bytes > open())
      throw new SandboxError('CAPACITY_EXCEEDED', 'no room', { data: { bytes } });
  };
  const store = {
    kind: 'loop',
    async create(name: string, bytes: number, _l: unknown, _a: unknown, _f: unknown, share?: DiskShare) {
      check(bytes, share);
      if (share === 'further') further.push(name);
      held.set(name, bytes);
      return { Type: 'bind', Source: `/ws/${name}`, Target: '/workspace' };
    },
    admitsFurther: async (bytes: number) => check(bytes, 'further'),
    remove: async (m: { source: string }) => void held.delete(m.source.slice(4)),
  } as unknown as WorkspaceStore;
  return { store, held, further };
};

/** A node (provision.ts's state) over a fake engine, `disk`, and a warm pool of `poolSize`. */
const fakeNode = (store: WorkspaceStore, poolSize = 0): NodeState => {
  let made = 0;
  const container = (id: string) => ({
    id,
    inspect: async () => ({ Id: id }),
    update: async () => {},
    rename: async () => {},
  });
  const docker = {
    info: async () => ({ Runtimes: {} }),
    createContainer: async () => container(`c${++made}`),
  } as unknown as Docker;
  const defaults = { ...DOCKER_DEFAULT_LIMITS, diskBytes: WS };
  const base = {
    docker,
    image: 'img',
    prefix: 'dsh',
    instance: INSTANCE,
    names: naming('dsh', INSTANCE),
    ownLabels: {},
    defaults,
    maxima: defaults,
    tmpBytes: MiB,
    warm: { make: async () => undefined, drop: async () => {} },
    onError: (e: unknown) => {
      throw e;
    },
    entries: new Map(),
    legacy: new Map(),
    owner: 'me',
    adoptedNames: new Set<string>(),
    tenants: new Set<string>(),
    creating: new Map<string, number>(),
    dormant: new Map<string, string>(),
    workspaces: store,
    links: undefined,
    runtimes: runtimeCatalog(docker),
    rollImage: false,
  };
  const pool = createWarmPool({
    size: poolSize,
    onError: () => {},
    make: async () => {
      const id = `pool${++made}`;
      const mount = await store.create(`${id}-ws`, WS, {});
      return {
        container: container(id),
        channel: echoPipe(),
        warm: undefined,
        workspace: { type: 'bind', source: mount.Source ?? '' },
      } as unknown as PoolItem;
    },
    discard: async () => {},
  });
  return Object.assign(base, { pool }) as unknown as NodeState;
};

const ensure = (s: NodeState, tenantId: string, agentId: string, diskBytes = WS) =>
  ensureSandbox(s, { agentId, tenantId, limits: { ...s.defaults, diskBytes } });

describe('the workspace disk across tenants, at the node', () => {
  it("keeps a quarter open for a tenant that holds none: one tenant's further agents are refused first", async () => {
    const { store } = fakeDisk();
    const s = fakeNode(store);
    await ensure(s, 'b', 'b1');
    await ensure(s, 'a', 'a1');
    await ensure(s, 'a', 'a2'); // leaves 64 MiB, the quarter
    expect(await codeOf(ensure(s, 'a', 'a3'))).toBe('CAPACITY_EXCEEDED');
    expect(await codeOf(ensure(s, 'b', 'b2'))).toBe('CAPACITY_EXCEEDED');
    // A newcomer's first agent still has its room.
    expect(await codeOf(ensure(s, 'c', 'c1'))).toBe('ok');
  });

  it("counts a tenant's creates under way: a burst at once is one first and further ones", async () => {
    const { store } = fakeDisk();
    const s = fakeNode(store);
    await ensure(s, 'b', 'b1');
    const burst = await Promise.all(['a1', 'a2', 'a3', 'a4'].map((id) => codeOf(ensure(s, 'a', id))));
    expect(burst).toEqual(['ok', 'ok', 'CAPACITY_EXCEEDED', 'CAPACITY_EXCEEDED']);
    expect(await codeOf(ensure(s, 'c', 'c1'))).toBe('ok');
  });

  it('counts the agents adopt() found after a restart as held, before any lookup', async () => {
    const { store } = fakeDisk();
    const s = fakeNode(store);
    for (const id of ['old1', 'old2']) {
      await store.create(`${s.names.agent(id)}-ws`, WS, {});
      s.dormant.set(s.names.agent(id), 'a');
    }
    await ensure(s, 'b', 'b1'); // 64 MiB open: the quarter
    expect(await codeOf(ensure(s, 'a', 'a1'))).toBe('CAPACITY_EXCEEDED');
    expect(await codeOf(ensure(s, 'c', 'c1'))).toBe('ok');
  });

  it("keeps a newcomer's room from another tenant's first agent too: a first takes at most the quarter past it", async () => {
    const { store } = fakeDisk();
    const s = fakeNode(store);
    await ensure(s, 'b', 'b1'); // 192 MiB open
    // Before, a's first as large as the open disk took it all, and c's first was refused.
    expect(await codeOf(ensure(s, 'a', 'a1', 3 * WS))).toBe('CAPACITY_EXCEEDED');
    expect(await codeOf(ensure(s, 'a', 'a1', 2 * WS))).toBe('ok'); // leaves the quarter
    expect(await codeOf(ensure(s, 'c', 'c1'))).toBe('ok'); // a first within the quarter
    expect(await codeOf(ensure(s, 'd', 'd1'))).toBe('CAPACITY_EXCEEDED'); // the disk is full
  });

  it("lets a newcomer's first agent of the default size have the quarter whatever their sizes", async () => {
    const { store } = fakeDisk(3 * WS); // a quarter of 192 MiB is 48 MiB, less than one workspace
    const s = fakeNode(store);
    await ensure(s, 'b', 'b1');
    await ensure(s, 'a', 'a1');
    expect(await codeOf(ensure(s, 'c', 'c1'))).toBe('ok'); // the last 64 MiB
  });

  it('lets one tenant alone fill the whole disk (the embedded default)', async () => {
    const { store, further } = fakeDisk();
    const s = fakeNode(store);
    for (const id of ['a1', 'a2', 'a3', 'a4']) expect(await codeOf(ensure(s, 'default', id))).toBe('ok');
    expect(further).toEqual([]);
    expect(await codeOf(ensure(s, 'default', 'a5'))).toBe('CAPACITY_EXCEEDED');
  });

  it('counts a tenant that asked and was refused: the holder then leaves it room as its agents go', async () => {
    const { store } = fakeDisk();
    const s = fakeNode(store);
    for (const id of ['a1', 'a2', 'a3', 'a4']) await ensure(s, 'a', id);
    expect(await codeOf(ensure(s, 'b', 'b1'))).toBe('CAPACITY_EXCEEDED');
    // a's agent a4 goes: a may not take its room back, b may.
    await store.remove({ type: 'bind', source: `/ws/${s.names.agent('a4')}-ws` });
    s.entries.delete('a4');
    expect(await codeOf(ensure(s, 'a', 'a5'))).toBe('CAPACITY_EXCEEDED');
    expect(await codeOf(ensure(s, 'b', 'b1'))).toBe('ok');
  });

  it('refuses a pooled sandbox to a tenant over its share as a cold create, and gives it to a newcomer', async () => {
    const { store } = fakeDisk();
    const s = fakeNode(store, 1);
    await s.pool.filled(); // 64 MiB for the pooled one
    await ensure(s, 'b', 'b1'); // the pooled one: the pool refills
    await s.pool.filled();
    await ensure(s, 'a', 'a1'); // the pooled one again
    await s.pool.filled(); // 192 MiB held: 64 open
    expect(s.pool.ready).toBe(1);
    const refused = await ensure(s, 'a', 'a2').catch((e: unknown) => e as SandboxError);
    expect(refused).toBeInstanceOf(SandboxError);
    expect((refused as SandboxError).code).toBe('CAPACITY_EXCEEDED');
    expect(s.pool.ready).toBe(1);
    const placed = await ensure(s, 'c', 'c1');
    expect(placed.id).toMatch(/^pool/);
    await s.pool.close();
  });
});

describe('the warm pool across tenants, at the node', () => {
  it("leaves a quarter of the pool to a tenant that took none: a burst's last create is cold, a newcomer's warm", async () => {
    const { store } = fakeDisk(16 * WS);
    const s = fakeNode(store, 4);
    await s.pool.filled();
    await ensure(s, 'b', 'b1'); // another tenant is about
    await s.pool.filled();
    const burst = await Promise.all(['a1', 'a2', 'a3', 'a4'].map((id) => ensure(s, 'a', id)));
    expect(burst.map((p) => (p.id.startsWith('pool') ? 'warm' : 'cold'))).toEqual([
      'warm',
      'warm',
      'warm',
      'cold',
    ]);
    expect((await ensure(s, 'c', 'c1')).id).toMatch(/^pool/);
    await s.pool.close();
  });
});

describe('the workspace disk across tenants, at loop admission', () => {
  let root: string;
  let s: LoopState;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'dsh-disk-shares-'));
    s = {
      root,
      overcommit: 1,
      reserveBytes: 0,
      freeBytes: async () => DISK,
      mine: new Set(),
      prepared: undefined,
      admitting: Promise.resolve(),
      copying: new Set(),
      spares: new Map(),
    };
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('admits workspaces up to the whole disk, a further one only while a quarter stays open', async () => {
    await admitted(s, 'a1', WS);
    await admitted(s, 'a2', WS, 'further');
    await admitted(s, 'a3', WS, 'further'); // leaves the quarter
    const refused = (await admitted(s, 'a4', WS, 'further').catch((e: unknown) => e)) as SandboxError;
    expect(refused.code).toBe('CAPACITY_EXCEEDED');
    expect(refused.message).toMatch(/for tenants that have no agent on it/);
    expect(refused.data).toMatchObject({ keptForNewcomersBytes: DISK / 4, openBytes: DISK / 4 });
    // Not further (a newcomer's first, a spare): up to the whole disk.
    await admitted(s, 'b1', WS);
    expect(await codeOf(admitted(s, 'c1', WS))).toBe('CAPACITY_EXCEEDED');
  });

  it("admits a tenant's first workspace while others are about only within the quarter past what it leaves", async () => {
    await admitted(s, 'b1', WS, 'first');
    const refused = (await admitted(s, 'a1', 3 * WS, 'first').catch((e: unknown) => e)) as SandboxError;
    expect(refused.code).toBe('CAPACITY_EXCEEDED');
    expect(refused.message).toMatch(/a first workspace here takes at most that much/);
    expect(refused.data).toMatchObject({ keptForNewcomersBytes: DISK / 4, openBytes: 3 * WS });
    await admitted(s, 'a1', 2 * WS, 'first'); // leaves the quarter open
    await admitted(s, 'c1', WS, 'first'); // takes the quarter, no more
    expect(await codeOf(admitted(s, 'd1', WS, 'first'))).toBe('CAPACITY_EXCEEDED');
  });

  it("admits a tenant's further workspaces one at a time: a burst cannot share the reserve out", async () => {
    await admitted(s, 'a1', WS);
    const burst = await Promise.all(
      ['a2', 'a3', 'a4', 'a5'].map((n) => codeOf(admitted(s, n, WS, 'further'))),
    );
    expect(burst.sort()).toEqual(['CAPACITY_EXCEEDED', 'CAPACITY_EXCEEDED', 'ok', 'ok']);
  });

  it('counts ready spares as open and keeps them when the reserve refuses', async () => {
    await admitted(s, 'a1', WS);
    await admitted(s, 'a2', WS, 'further');
    // A ready spare of 64 MiB (sparse: all of it may still grow).
    const spare = 'own-spare-x';
    writeFileSync(join(root, `${spare}.img`), '');
    truncateSync(join(root, `${spare}.img`), WS);
    const ready = [spare];
    s.mine.add(spare);
    s.spares.set('own', {
      prefix: 'own',
      bytes: WS,
      count: 1,
      onError: () => {},
      ready,
      filling: undefined,
      dropped: false,
    });
    // Open: the free 64 MiB and the spare's, so a further one fits and leaves the quarter.
    await admitted(s, 'a3', WS, 'further');
    // Open now: the spare's alone; the reserve refuses, and the spare stays (removing it would not admit).
    expect(await codeOf(admitted(s, 'a4', WS, 'further'))).toBe('CAPACITY_EXCEEDED');
    expect(ready).toEqual([spare]);
    // A check only (a pooled sandbox for a further agent) refuses the same and makes no image.
    expect(await codeOf(admitsFurther(s, WS))).toBe('CAPACITY_EXCEEDED');
    // A newcomer's first: the spare gives way.
    await admitted(s, 'b1', WS);
    expect(ready).toEqual([]);
  });
});
