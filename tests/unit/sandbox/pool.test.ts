import { describe, expect, it } from 'vitest';
import { createWarmPool, type PoolItem } from '../../../host/sandbox/docker/pool.ts';

/** A pool item whose attachment closes when `gone[id]()` is called (its container was removed). */
const gone: Record<string, () => void> = {};
const item = (n: number): PoolItem => {
  const closed = new Promise<void>((resolve) => {
    gone[`c${n}`] = resolve;
  });
  return { container: { id: `c${n}` }, channel: { closed } } as unknown as PoolItem;
};

describe('warm pool', () => {
  it('fills to size, refills after take, and discards what is left on close', async () => {
    let made = 0;
    const discarded: string[] = [];
    const pool = createWarmPool({
      size: 2,
      make: async () => item(made++),
      discard: async (i) => void discarded.push(i.container.id),
      onError: () => {},
    });
    await pool.filled();
    expect(pool.ready).toBe(2);
    expect(pool.take()?.container.id).toBe('c0');
    await pool.filled();
    expect([pool.ready, made]).toEqual([2, 3]);
    await pool.close();
    expect(discarded).toEqual(['c1', 'c2']);
    expect(pool.take()).toBeUndefined();
  });

  it('keeps a quarter of the ready items for a tenant that took none of the last takes: a burst goes cold past it', async () => {
    let made = 0;
    const pool = createWarmPool({
      size: 4,
      make: async () => item(made++),
      discard: async () => {},
      onError: () => {},
    });
    await pool.filled();
    // Tenant a's burst (no await between: no refill meanwhile) takes three and leaves the last.
    const burst = [1, 2, 3, 4].map(() => pool.take([], 'a')?.container.id);
    expect(burst).toEqual(['c0', 'c1', 'c2', undefined]);
    // A newcomer gets the warm one; then it is a recent taker too.
    expect(pool.take([], 'b')?.container.id).toBe('c3');
    await pool.filled();
    expect(pool.take([], 'b')?.container.id).toBe('c4');
    // Without a taker (one tenant alone on the node): every ready item, as before.
    expect([pool.take(), pool.take(), pool.take(), pool.take()].map((i) => i?.container.id)).toEqual([
      'c5',
      'c6',
      'c7',
      undefined,
    ]);
    await pool.close();
  });

  it('gives up after repeated failures instead of spinning, and reports them', async () => {
    const errors: unknown[] = [];
    const pool = createWarmPool({
      size: 1,
      make: async () => Promise.reject(new Error('no image')),
      discard: async () => {},
      onError: (e) => errors.push(e),
    });
    await pool.filled();
    expect(pool.ready).toBe(0);
    expect(errors).toHaveLength(3);
    await pool.close();
  });

  it('discards an item that arrives after close', async () => {
    let release: () => void = () => {};
    const discarded: string[] = [];
    const pool = createWarmPool({
      size: 1,
      make: () => new Promise<PoolItem>((r) => (release = () => r(item(9)))),
      discard: async (i) => void discarded.push(i.container.id),
      onError: () => {},
    });
    const closing = pool.close();
    release();
    await closing;
    expect(discarded).toEqual(['c9']);
  });

  it('replaces a ready item whose container went away, and leaves taken items alone', async () => {
    let made = 0;
    const discarded: string[] = [];
    const pool = createWarmPool({
      size: 2,
      make: async () => item(made++),
      discard: async (i) => void discarded.push(i.container.id),
      onError: () => {},
    });
    await pool.filled();
    const taken = pool.take();
    await pool.filled();
    gone.c1?.();
    gone[taken?.container.id ?? '']?.();
    await new Promise((r) => setTimeout(r, 0));
    await pool.filled();
    expect(discarded).toEqual(['c1']);
    expect(pool.ready).toBe(2);
    expect([pool.take()?.container.id, pool.take()?.container.id]).toEqual(['c2', 'c3']);
    await pool.close();
  });

  it('hands a claimed item to its claim only: a second claim, a plain take, a forged token get nothing', async () => {
    let made = 0;
    const pool = createWarmPool({
      size: 2,
      make: async () => item(100 + made++),
      discard: async () => {},
      onError: () => {},
    });
    await pool.filled();
    expect(pool.unclaimed()).toEqual(['c100', 'c101']);
    const first = pool.claim('c100');
    expect(first?.claim).toMatch(/^[0-9a-f]{32}$/);
    expect(pool.claim('c100')).toBeUndefined();
    expect(pool.claim('nope')).toBeUndefined();
    expect(pool.unclaimed()).toEqual(['c101']);
    // Ready for a holder: the unclaimed ones and its own; a forged token or another's id counts nothing.
    const own = { id: 'c100', claim: first?.claim ?? '' };
    expect(pool.readyFor([])).toBe(1);
    expect(pool.readyFor([own])).toBe(2);
    expect(pool.readyFor([{ id: 'c100', claim: '0'.repeat(32) }])).toBe(1);
    expect(pool.readyFor([{ ...own, id: 'c101' }])).toBe(1);
    expect(pool.take([{ id: 'c100', claim: '0'.repeat(32) }])?.container.id).toBe('c101');
    expect(pool.take()).toBeUndefined();
    expect(pool.take([{ id: 'c100', claim: first?.claim ?? '' }])?.container.id).toBe('c100');
    await pool.close();
  });
});
