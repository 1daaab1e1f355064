// A snapshot's copy takes host disk outside every workspace's limit, so it is admitted like a
// workspace (docs/security.md, "Snapshots and forks"; adversarial pass round 6): before, a tenant
// without a `snapshotBytes` quota (none by default) snapshotted its agent's full workspace again and
// again until the host disk was below what the workspaces had been promised (measured on the real
// service: 25 snapshots of a 55 MiB workspace took the free disk 41 MiB under DSH_DISK_RESERVE_MB,
// and another tenant's next agent was refused CAPACITY_EXCEEDED). No loop device is needed: a
// snapshot of a workspace that is not mounted is a copy of its image file; the host disk is a fake
// of DISK bytes whose free figure is DISK less every block the files under the root take, so each
// copy really takes what it would.
import {
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SandboxError } from '../../../host/errors.ts';
import { DOCKER_DEFAULT_LIMITS } from '../../../host/sandbox/docker/config.ts';
import { snapshotAgent } from '../../../host/sandbox/docker/node-snapshots.ts';
import type { NodeBase } from '../../../host/sandbox/docker/node-state.ts';
import { createLoopWorkspaces } from '../../../host/sandbox/docker/workspaces/loop.ts';
import { admitted } from '../../../host/sandbox/docker/workspaces/loop-admission.ts';
import { snapshotFolder, takeSnapshot } from '../../../host/sandbox/docker/workspaces/loop-snapshots.ts';
import type { LoopState } from '../../../host/sandbox/docker/workspaces/loop-state.ts';
import type { WorkspaceStore } from '../../../host/sandbox/docker/workspaces.ts';

const MiB = 1024 * 1024;
// 64 MiB and one of slack: a file of 8 MiB written may take a block or two more for its extents on
// a disk fragmented by other work (the machine's, not the fake's), and the counts below must not
// hang on that.
const DISK = 65 * MiB;
const WS = 16 * MiB;
const USED = 8 * MiB;

let root: string;

/** The blocks every file under `dir` takes, in bytes. */
const taken = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce((sum, e) => {
    const path = join(dir, e.name);
    return sum + (e.isDirectory() ? taken(path) : statSync(path).blocks * 512);
  }, 0);

/** A workspace image of WS bytes with USED of them written (not a file system: only copied here). */
const workspace = (name: string) => {
  const image = join(root, `${name}.img`);
  writeFileSync(image, Buffer.alloc(USED, 7));
  truncateSync(image, WS);
  return { type: 'bind', source: join(root, name) };
};

const codeOf = (p: Promise<unknown>): Promise<string> =>
  p.then(
    () => 'ok',
    (e: unknown) => (e instanceof SandboxError ? e.code : String(e)),
  );

let store: WorkspaceStore;
let s: LoopState;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'dsh-snapshot-admission-'));
  const freeBytes = async () => DISK - taken(root);
  store = createLoopWorkspaces(root, { reserveBytes: 0, freeBytes });
  s = {
    root,
    overcommit: 1,
    reserveBytes: 0,
    freeBytes,
    mine: new Set(),
    prepared: undefined,
    admitting: Promise.resolve(),
    copying: new Set(),
    spares: new Map(),
  };
});
/** A snapshot of workspace `ws-a` (the image only: it is not mounted). */
const snapshot = (id: string, further = false) =>
  codeOf(takeSnapshot(s, snapshotFolder(root), 'ws-a', id, further ? 'further' : undefined));
/** A new workspace's image (admitted and made sparse; never formatted or mounted here). */
const newImage = (name: string) => codeOf(admitted(s, name, WS));
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("a snapshot's copy on the host disk", () => {
  it('is admitted like a workspace: refused, with nothing copied, once it would take what the workspaces may still grow into', async () => {
    const ws = workspace('ws-a');
    // 65 MiB: 8 written, 8 the workspace may still grow: 49 for snapshots of 8 each.
    const codes: string[] = [];
    for (let i = 0; i < 8; i++)
      codes.push(await codeOf(store.snapshot?.(ws, `snap_${i}`) ?? Promise.resolve()));
    expect(codes).toEqual(['ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'CAPACITY_EXCEEDED', 'CAPACITY_EXCEEDED']);
    // The workspace can still grow to its limit, and no temporary copy is left.
    expect(DISK - taken(root)).toBeGreaterThanOrEqual(WS - USED);
    expect(readdirSync(join(root, '.snapshots')).filter((f) => !f.endsWith('.img'))).toEqual([]);
    const refused = (await store.snapshot?.(ws, 'snap_x').catch((e: unknown) => e)) as SandboxError;
    expect(refused.data).toMatchObject({ snapshotBytes: USED });
    // A snapshot dropped gives its room back.
    await store.dropSnapshot?.('snap_0');
    expect(await codeOf(store.snapshot?.(ws, 'snap_y') ?? Promise.resolve())).toBe('ok');
    expect(readFileSync(join(root, '.snapshots', 'snap_y.img')).subarray(0, 4)).toEqual(Buffer.alloc(4, 7));
  });

  it('counts copies under way: snapshots and a new workspace at once take no more than the room, and no less', async () => {
    workspace('ws-a');
    const at = Array.from({ length: 8 }, (_, i) => snapshot(`snap_${i}`));
    const made = newImage('ws-b');
    const codes = await Promise.all(at);
    // 49 of room: six snapshots, or four and the new workspace (the order of their turns decides).
    const fits = (await made) === 'ok';
    expect(codes.filter((c) => c === 'ok')).toHaveLength(fits ? 4 : 6);
    // Every workspace can still grow to its limit.
    expect(DISK - taken(root)).toBeGreaterThanOrEqual(WS - USED + (fits ? WS : 0));
  });

  it("leaves the reserve open for tenants that hold none when another tenant is about (the node's further)", async () => {
    workspace('ws-a');
    // Open 49 of a whole of 65 (the image's 16 and the snapshots in use): a further use leaves a
    // quarter (16.25) open, so four of 8.
    const codes: string[] = [];
    for (let i = 0; i < 6; i++) codes.push(await snapshot(`snap_${i}`, true));
    expect(codes).toEqual(['ok', 'ok', 'ok', 'ok', 'CAPACITY_EXCEEDED', 'CAPACITY_EXCEEDED']);
    // A newcomer's first workspace still fits.
    expect(await newImage('ws-newcomer')).toBe('ok');
  });
});

describe("an agent's snapshot at the node", () => {
  /** A node whose agent `a1` of tenant `a` has workspace `ws-a`, with `others` holding sandboxes too. */
  const node = (others: Record<string, string>) => {
    const asked: (boolean | undefined)[] = [];
    const entry = (agentId: string, tenantId: string) => ({
      agentId,
      tenantId,
      destroyed: false,
      limits: DOCKER_DEFAULT_LIMITS,
      workspace: { type: 'bind', source: join(root, 'ws-a') },
    });
    const entries = new Map(Object.entries(others).map(([agent, tenant]) => [agent, entry(agent, tenant)]));
    entries.set('a1', entry('a1', 'a'));
    const workspaces = {
      ...store,
      snapshot: (mount: never, id: string, further?: boolean) => {
        asked.push(further);
        return store.snapshot?.(mount, id, further);
      },
    };
    const s = { entries, tenants: new Set<string>(), creating: new Map(), dormant: new Map(), workspaces };
    return { s: s as unknown as NodeBase, asked };
  };

  it("is its tenant's further use while another tenant holds a sandbox here, and not when the tenant is alone", async () => {
    workspace('ws-a');
    const alone = node({});
    await snapshotAgent(alone.s, 'a1', 'snap_alone');
    expect(alone.asked).toEqual([false]);
    const shared = node({ b1: 'b' });
    await snapshotAgent(shared.s, 'a1', 'snap_shared');
    expect(shared.asked).toEqual([true]);
  });
});
