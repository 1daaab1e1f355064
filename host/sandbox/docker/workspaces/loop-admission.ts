// Room on the host disk for a new image: a workspace is made only when every workspace could
// still grow to its limit (times `overcommit`) with `reserveBytes` to spare, so a full host disk,
// which would fail every workspace's writes at once, cannot happen. Spares are `.img` files under
// `root`, so admission counts them like any workspace; a workspace that would not fit otherwise
// removes ready spares first, one at a time (they are room held for later, not in use).
// A tenant's further workspace (one for a tenant that holds some already, while another tenant is
// about: the node decides, provision.ts) is admitted only while a quarter of the admissible disk
// stays open after it (host/shares.ts): several tenants each within its own caps cannot take the
// whole disk and refuse every other tenant's first agent (round 5 of the adversarial pass). A
// tenant's first workspace there (one larger than the default: provision.ts shareOf) may take from
// that quarter, but no more than all of it: before, one first as large as the open disk
// (`sandbox.diskMb` up to 64 GiB) took it all, and every other tenant's first agent was refused for
// as long as it lived (round 6). Spares count as open there (ready ones give way to anyone's
// workspace, and one being made is ready soon), so removing them never admits a further one.
// A snapshot's copy (loop-snapshots.ts) takes host disk outside every workspace's limit, its
// blocks in use: it is admitted here too, in the same turns, as room taken for good (that many
// bytes of free disk, times `overcommit`), and as a further use of its tenant's while another
// tenant is about. Before, snapshots were copied whatever the disk held, so one tenant without a
// `snapshotBytes` quota could fill the host disk under every workspace (the very state admission
// exists to prevent) and refuse every other tenant's next agent (adversarial pass, round 6).
// Invariants: admission checks and the truncates they admit run one at a time (`admitting`), so
// two creates cannot both take the last room (nor a tenant's two further ones the reserve); a
// refused image is never created; a copy under way counts in `copying` from its admission until it
// is whole or gone, so neither a create nor another copy takes the room it is about to fill.
import { open, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { SandboxError } from '../../../errors.ts';
import { leavesReserve, reserveFor } from '../../../shares.ts';
import type { DiskShare } from '../workspaces.ts';
import { removeOne } from './loop-mount.ts';
import { type LoopState, paths } from './loop-state.ts';

const MiB = 1024 ** 2;

export function isFull(e: unknown): boolean {
  return e instanceof SandboxError && e.code === 'CAPACITY_EXCEEDED';
}

/** A refusal of a further workspace for the reserve: removing spares would not admit it. */
const isReserve = (e: unknown): boolean =>
  isFull(e) && (e as SandboxError).data?.keptForNewcomersBytes !== undefined;

/** Whether `name` is a spare this process keeps, ready or being made (one a crash left is not). */
const isSpare = (s: LoopState, name: string): boolean =>
  s.mine.has(name) && [...s.spares.values()].some((pool) => name.startsWith(`${pool.prefix}-spare-`));

/** The images under `root`: what they may still grow (holes), that of the spares, and the size of the others. */
async function imagesOf(s: LoopState): Promise<{ holes: number; spareHoles: number; inUse: number }> {
  const sum = { holes: 0, spareHoles: 0, inUse: 0 };
  for (const file of await readdir(s.root)) {
    if (!file.endsWith('.img')) continue;
    const st = await stat(join(s.root, file)).catch(() => undefined);
    if (!st) continue;
    const hole = Math.max(0, st.size - st.blocks * 512);
    sum.holes += hole;
    if (isSpare(s, file.slice(0, -4))) sum.spareHoles += hole;
    else sum.inUse += st.size;
  }
  return sum;
}

/** The host disk a file takes (its blocks), or undefined when it is not there. */
const blocksOf = (file: string): Promise<number | undefined> =>
  stat(file).then(
    (st) => st.blocks * 512,
    () => undefined,
  );

/** The room the copies under way will still take: each one's charge less what it wrote already. */
async function copiesAhead(s: LoopState): Promise<number> {
  let ahead = 0;
  for (const copy of s.copying) {
    const written = (await blocksOf(copy.temp)) ?? (await blocksOf(copy.target)) ?? 0;
    ahead += Math.max(0, copy.charge - written * s.overcommit);
  }
  return ahead;
}

/** The host disk the snapshot files under `root` take (`.snapshots` and its instances' folders). */
async function snapshotFilesBytes(s: LoopState): Promise<number> {
  let sum = 0;
  const walk = async (dir: string, depth: number): Promise<void> => {
    for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      if (e.isDirectory() && depth > 0) await walk(join(dir, e.name), depth - 1);
      else if (e.isFile()) sum += (await blocksOf(join(dir, e.name))) ?? 0;
    }
  };
  await walk(join(s.root, '.snapshots'), 1);
  return sum;
}

/**
 * Whether a workspace of `bytes` (its `share` while other tenants are about) leaves the reserve
 * for tenants that hold none, or, a tenant's first, fits inside it: a first may take from the
 * reserve, but no more than all of it, so one tenant's first cannot take the disk every other
 * tenant's first needs.
 */
export const sharesFairly = (share: DiskShare, open: number, whole: number, bytes: number): boolean =>
  leavesReserve(open, whole, bytes) || (share === 'first' && bytes <= reserveFor(whole));

/** Why a workspace of `bytes` was refused for the reserve (sharesFairly). */
function refusal(share: DiskShare, kept: number, bytes: number): string {
  const why =
    share === 'further'
      ? 'and this tenant has some already'
      : `and a first workspace here takes at most that much while other tenants are about`;
  return `This host keeps its last ${Math.round(kept / MiB)} MiB of workspace disk for tenants that have no agent on it, ${why}, so there is no room for ${share === 'further' ? 'another' : 'a'} ${Math.round(bytes / MiB)} MiB workspace; ask for a smaller one, remove an agent, or try later.`;
}

/**
 * Refuses a workspace the host disk could not hold once every workspace grew to its limit, and
 * one of a tenant's while others are about (`share`) that does not share fairly (sharesFairly);
 * makes the sparse image of `name` (none: a check only).
 */
async function admit(
  s: LoopState,
  name: string | undefined,
  bytes: number,
  share?: DiskShare,
): Promise<void> {
  const images = await imagesOf(s);
  const free = (await s.freeBytes(s.root)) - s.reserveBytes;
  const { overcommit } = s;
  const room = free * overcommit - images.holes - (await copiesAhead(s));
  if (share !== undefined) {
    // What a tenant that holds none could still be given, and the whole of it with the workspaces
    // and the snapshots in use (tenants hold them as they hold workspaces).
    const openBytes = room + images.spareHoles;
    const wholeBytes = Math.max(0, openBytes + images.inUse + (await snapshotFilesBytes(s)) * overcommit);
    if (!sharesFairly(share, openBytes, wholeBytes, bytes)) {
      const kept = reserveFor(wholeBytes);
      throw new SandboxError('CAPACITY_EXCEEDED', refusal(share, kept, bytes), {
        data: { bytes, openBytes, wholeBytes, keptForNewcomersBytes: kept },
      });
    }
  }
  const growth = images.holes + bytes;
  if (bytes > room) {
    throw new SandboxError(
      'CAPACITY_EXCEEDED',
      `This host has no disk left for another ${Math.round(bytes / MiB)} MiB workspace (the existing ones may still grow into what is free); ask for a smaller one or try later.`,
      { data: { name, bytes, growthBytes: growth, freeBytes: free, overcommit } },
    );
  }
  if (name === undefined) return;
  const file = await open(paths(s, name).image, 'w', 0o600);
  await file.truncate(bytes).finally(() => file.close());
}

/** Refuses a workspace of `bytes` of `share` the reserve does not leave room for; only within a turn (inTurn). */
export const checkShare = (s: LoopState, bytes: number, share: DiskShare): Promise<void> =>
  admit(s, undefined, bytes, share);

/** A further workspace's checkShare in its turn (WorkspaceStore.admitsFurther: before a pooled sandbox goes to such a tenant). */
export const admitsFurther = (s: LoopState, bytes: number): Promise<void> =>
  inTurn(s, () => checkShare(s, bytes, 'further'));

/** `f` in its turn, after every admission before it (see the header). */
export function inTurn<T>(s: LoopState, f: () => Promise<T>): Promise<T> {
  const turn = s.admitting.then(f);
  s.admitting = turn.catch(() => {});
  return turn;
}

/**
 * Runs `copy`, a snapshot's copy into `temp` (renamed `target` once whole) that will take
 * `usedBytes` of host disk, once admitted in its turn as room taken for good (`share` 'further':
 * its tenant's further use, which leaves the reserve open); CAPACITY_EXCEEDED, with nothing copied,
 * when it does not fit. Until `copy` settles the copy counts in `copying`, less what its file holds
 * already (the disk's free figure counts that): by then its blocks are on the disk, or gone.
 */
export async function admittedCopy<T>(
  s: LoopState,
  files: { temp: string; target: string },
  usedBytes: number,
  share: 'further' | undefined,
  copy: () => Promise<T>,
): Promise<T> {
  const pending = { ...files, charge: Math.ceil(usedBytes * s.overcommit) };
  await inTurn(s, async () => {
    try {
      await admit(s, undefined, pending.charge, share);
    } catch (e) {
      if (!isFull(e)) throw e;
      throw new SandboxError(
        'CAPACITY_EXCEEDED',
        `This host has no disk left for a snapshot of ${Math.round(usedBytes / MiB)} MiB: its workspaces may still grow into what is free${share === undefined ? '' : ', and a part is kept for tenants that have no agent on it'}. Remove snapshots or files, or try later.`,
        { data: { ...(e as SandboxError).data, snapshotBytes: usedBytes } },
      );
    }
    s.copying.add(pending);
  });
  try {
    return await copy();
  } finally {
    s.copying.delete(pending);
  }
}

/** The sparse image of `name`, admitted in its turn after every admission before it. */
export function admitInTurn(s: LoopState, name: string, bytes: number, share?: DiskShare): Promise<void> {
  return inTurn(s, () => admit(s, name, bytes, share));
}

/**
 * The sparse image of `name`, admitted (serialised with every other admission). When it does not
 * fit, ready spares give way first, one at a time: they are room held for later, not in use.
 */
export async function admitted(s: LoopState, name: string, bytes: number, share?: DiskShare): Promise<void> {
  for (;;) {
    try {
      return await admitInTurn(s, name, bytes, share);
    } catch (e) {
      const spare = isFull(e) && !isReserve(e) ? anySpare(s) : undefined;
      if (spare === undefined) throw e;
      await removeOne(s, spare);
    }
  }
}

/** A ready spare of any prefix, taken out of its list. */
function anySpare(s: LoopState): string | undefined {
  for (const pool of s.spares.values()) if (pool.ready.length > 0) return pool.ready.pop();
  return undefined;
}
