// Spares (keepSpares): formatted, unmounted images `<prefix>-spare-<random>.img` made ahead in the
// background, so that a create of the spared size only renames one to its own name and mounts it.
// Invariants: a spare is handed out by this process only, from its in-memory list (taken
// synchronously, then renamed: never to two workspaces); one a crash left behind, whole or
// half-made, is never reused: it carries the instance's prefix and no container uses it, so the
// next adopt() sweeps it. A spare is made only while the room is there (never by removing other
// spares), at the lowest priority, and a failed one is removed, never kept half-made; refills are
// single-flight per pool and stop at the first failure until the next take.
import { nanoid } from 'nanoid';
import { admitInTurn, isFull } from './loop-admission.ts';
import { format, removeOne } from './loop-mount.ts';
import { type LoopState, MIN_WORKSPACE_BYTES, NAME, paths, prepare, type Spares } from './loop-state.ts';

/** A ready spare for `name` of `bytes`, out of its list (a refill follows), or undefined. */
export function takeSpare(s: LoopState, name: string, bytes: number): string | undefined {
  for (const pool of s.spares.values()) {
    if (!name.startsWith(`${pool.prefix}-`) || pool.bytes !== bytes) continue;
    const spare = pool.ready.shift();
    refill(s, pool);
    if (spare !== undefined) return spare;
  }
  return undefined;
}

/** One formatted spare image for `pool`; a failed one is removed (never kept half-made). */
async function makeSpare(s: LoopState, pool: Spares): Promise<string> {
  const name = `${pool.prefix}-spare-${nanoid(10).replace(/[^a-zA-Z0-9]/g, 'x')}`;
  s.mine.add(name);
  try {
    await prepare(s);
    // Only while the room is there (never by removing other spares).
    await admitInTurn(s, name, pool.bytes);
    // At the lowest priority: a spare is made while a create that took one boots its sandbox.
    await format(paths(s, name).image, true);
    return name;
  } catch (e) {
    await removeOne(s, name).catch(() => {});
    throw e;
  }
}

/**
 * Single-flight background refill up to `count`; stops at the first failure until the next take.
 * No room for a spare is not a failure: the room is for workspaces in use.
 */
function refill(s: LoopState, pool: Spares): void {
  if (pool.filling || pool.dropped) return;
  pool.filling = (async () => {
    while (!pool.dropped && pool.ready.length < pool.count) {
      const name = await makeSpare(s, pool);
      if (pool.dropped) await removeOne(s, name);
      else pool.ready.push(name);
    }
  })()
    .catch((e: unknown) => {
      if (!isFull(e)) pool.onError(e);
    })
    .finally(() => {
      pool.filling = undefined;
    });
}

export function keepSpares(
  s: LoopState,
  prefix: string,
  bytes: number,
  count: number,
  onError: (e: unknown) => void,
): void {
  if (!NAME.test(`${prefix}-spare-x`) || count <= 0 || bytes < MIN_WORKSPACE_BYTES) return;
  const pool: Spares = { prefix, bytes, count, onError, ready: [], filling: undefined, dropped: false };
  const before = s.spares.get(prefix);
  s.spares.set(prefix, pool);
  if (before) void dropPool(s, before);
  refill(s, pool);
}

async function dropPool(s: LoopState, pool: Spares): Promise<void> {
  pool.dropped = true;
  await pool.filling;
  for (const name of pool.ready.splice(0)) await removeOne(s, name).catch(pool.onError);
}

export async function sparesFilled(s: LoopState, prefix: string): Promise<void> {
  await s.spares.get(prefix)?.filling;
}

export async function dropSpares(s: LoopState, prefix: string): Promise<void> {
  const pool = s.spares.get(prefix);
  if (!pool) return;
  s.spares.delete(prefix);
  await dropPool(s, pool);
}
