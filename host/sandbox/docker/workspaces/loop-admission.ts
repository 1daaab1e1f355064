// Room on the host disk for a new image: a workspace is made only when every workspace could
// still grow to its limit (times `overcommit`) with `reserveBytes` to spare, so a full host disk,
// which would fail every workspace's writes at once, cannot happen. Spares are `.img` files under
// `root`, so admission counts them like any workspace; a workspace that would not fit otherwise
// removes ready spares first, one at a time (they are room held for later, not in use).
// Invariants: admission checks and the truncates they admit run one at a time (`admitting`), so
// two creates cannot both take the last room; a refused image is never created.
import { open, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { SandboxError } from '../../../errors.ts';
import { removeOne } from './loop-mount.ts';
import { type LoopState, paths } from './loop-state.ts';

export function isFull(e: unknown): boolean {
  return e instanceof SandboxError && e.code === 'CAPACITY_EXCEEDED';
}

/** Refuses a workspace the host disk could not hold once every workspace grew to its limit. */
async function admit(s: LoopState, name: string, bytes: number): Promise<void> {
  let growth = bytes;
  for (const file of await readdir(s.root)) {
    if (!file.endsWith('.img')) continue;
    const st = await stat(join(s.root, file)).catch(() => undefined);
    if (st) growth += Math.max(0, st.size - st.blocks * 512);
  }
  const free = (await s.freeBytes(s.root)) - s.reserveBytes;
  const { overcommit } = s;
  if (growth > free * overcommit) {
    throw new SandboxError(
      'CAPACITY_EXCEEDED',
      `This host has no disk left for another ${Math.round(bytes / 1024 ** 2)} MiB workspace (the existing ones may still grow into what is free); ask for a smaller one or try later.`,
      { data: { name, bytes, growthBytes: growth, freeBytes: free, overcommit } },
    );
  }
  const file = await open(paths(s, name).image, 'w', 0o600);
  await file.truncate(bytes).finally(() => file.close());
}

/** The sparse image of `name`, admitted in its turn after every admission before it. */
export function admitInTurn(s: LoopState, name: string, bytes: number): Promise<void> {
  const turn = s.admitting.then(() => admit(s, name, bytes));
  s.admitting = turn.catch(() => {});
  return turn;
}

/**
 * The sparse image of `name`, admitted (serialised with every other admission). When it does not
 * fit, ready spares give way first, one at a time: they are room held for later, not in use.
 */
export async function admitted(s: LoopState, name: string, bytes: number): Promise<void> {
  for (;;) {
    try {
      return await admitInTurn(s, name, bytes);
    } catch (e) {
      const spare = isFull(e) ? anySpare(s) : undefined;
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
