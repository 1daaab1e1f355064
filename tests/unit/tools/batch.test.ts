import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { createRegistry, defineTool } from '../../../host/tools/index.ts';
import { agent, call, gatedTool, tick } from './helpers.ts';

/** A tool that records how many of its calls run at the same time. */
const counting = (name: string, safe: boolean, stats: { now: number; max: number; order: string[] }) =>
  defineTool({
    name,
    description: 'd',
    parameters: v.object({ key: v.string() }),
    output: { schema: v.string() },
    isConcurrencySafe: () => safe,
    async execute(args) {
      stats.order.push(args.key);
      stats.max = Math.max(stats.max, ++stats.now);
      await tick(2);
      stats.now--;
      return args.key;
    },
  });

describe('batch scheduler', () => {
  it('consecutive concurrency-safe calls share a bounded pool (default 8)', async () => {
    const registry = createRegistry();
    const stats = { now: 0, max: 0, order: [] as string[] };
    registry.global.register(counting('read', true, stats));
    const calls = Array.from({ length: 20 }, (_, i) => call(`c${i}`, 'read', { key: `k${i}` }));
    const results = await registry.global.execute(calls, { agent });
    expect(stats.max).toBe(8);
    expect(results.map((r) => r.value)).toEqual(calls.map((_, i) => `k${i}`));
    expect(stats.order).toEqual(calls.map((_, i) => `k${i}`));
  });

  it('the pool size is configurable per registry and per batch', async () => {
    const stats = { now: 0, max: 0, order: [] as string[] };
    const registry = createRegistry({ concurrency: 3 });
    registry.global.register(counting('read', true, stats));
    const calls = Array.from({ length: 10 }, (_, i) => call(`c${i}`, 'read', { key: `k${i}` }));
    await registry.global.execute(calls, { agent });
    expect(stats.max).toBe(3);
    stats.max = 0;
    await registry.global.execute(calls, { agent, concurrency: 2 });
    expect(stats.max).toBe(2);
  });

  it('tools are exclusive by default: calls without a classifier never overlap', async () => {
    const registry = createRegistry();
    const stats = { now: 0, max: 0, order: [] as string[] };
    registry.global.register(counting('write', false, stats));
    await registry.global.execute(
      [1, 2, 3].map((i) => call(`c${i}`, 'write', { key: `${i}` })),
      { agent },
    );
    expect(stats.max).toBe(1);
  });

  it('an exclusive call drains the pool, runs alone, and holds back later calls; results stay in model order', async () => {
    const registry = createRegistry();
    const events: string[] = [];
    const read = gatedTool('read', true, events);
    const write = gatedTool('write', false, events);
    registry.global.register(read.definition);
    registry.global.register(write.definition);
    const pending = registry.global.execute(
      [
        call('1', 'read', { key: 'r1' }),
        call('2', 'read', { key: 'r2' }),
        call('3', 'write', { key: 'w' }),
        call('4', 'read', { key: 'r3' }),
      ],
      { agent },
    );
    await tick(5);
    expect(events).toEqual(['start:r1', 'start:r2']);
    read.release('r2');
    await tick(5);
    expect(events).toEqual(['start:r1', 'start:r2', 'end:r2']); // write waits for r1 too
    read.release('r1');
    await tick(5);
    expect(events.slice(3)).toEqual(['end:r1', 'start:w']);
    write.release('w');
    await tick(5);
    expect(events.slice(5)).toEqual(['end:w', 'start:r3']);
    read.release('r3');
    const results = await pending;
    expect(results.map((r) => r.id)).toEqual(['1', '2', '3', '4']);
    expect(results.every((r) => r.ok)).toBe(true);
  });

  it('a throwing classifier makes the call exclusive', async () => {
    const registry = createRegistry();
    const stats = { now: 0, max: 0, order: [] as string[] };
    registry.global.register(
      defineTool({
        name: 'odd',
        description: 'd',
        parameters: v.object({ key: v.string() }),
        output: { schema: v.string() },
        isConcurrencySafe: () => {
          throw new Error('cannot tell');
        },
        async execute(args) {
          stats.max = Math.max(stats.max, ++stats.now);
          await tick(2);
          stats.now--;
          return args.key;
        },
      }),
    );
    await registry.global.execute(
      [1, 2, 3].map((i) => call(`c${i}`, 'odd', { key: `${i}` })),
      { agent },
    );
    expect(stats.max).toBe(1);
  });

  it('the classifier sees the validated arguments', async () => {
    const registry = createRegistry();
    const stats = { now: 0, max: 0, order: [] as string[] };
    registry.global.register(
      defineTool({
        name: 'maybe',
        description: 'd',
        parameters: v.object({ key: v.string(), readonly: v.boolean() }),
        output: { schema: v.string() },
        isConcurrencySafe: (args) => args.readonly,
        async execute(args) {
          stats.max = Math.max(stats.max, ++stats.now);
          await tick(2);
          stats.now--;
          return args.key;
        },
      }),
    );
    await registry.global.execute(
      [1, 2, 3].map((i) => call(`c${i}`, 'maybe', { key: `${i}`, readonly: true })),
      { agent },
    );
    expect(stats.max).toBe(3);
    stats.max = 0;
    await registry.global.execute(
      [1, 2, 3].map((i) => call(`c${i}`, 'maybe', { key: `${i}`, readonly: false })),
      { agent },
    );
    expect(stats.max).toBe(1);
  });

  it('a failing call does not stop the rest of the batch', async () => {
    const registry = createRegistry();
    const stats = { now: 0, max: 0, order: [] as string[] };
    registry.global.register(counting('read', true, stats));
    const results = await registry.global.execute(
      [call('1', 'read', { key: 'a' }), call('2', 'missing'), call('3', 'read', { key: 'b' })],
      { agent },
    );
    expect(results.map((r) => r.ok)).toEqual([true, false, true]);
  });
});
