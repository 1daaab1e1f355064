import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { createMemoryEventLog } from '../../../host/store/memory.ts';
import type { EventLog } from '../../../host/store/types.ts';
import { createRegistry, defineTool } from '../../../host/tools/index.ts';
import { until } from '../../helpers/until.ts';
import { agent, call, echoTool, tick } from './helpers.ts';

const nested = defineTool({
  name: 'prog',
  description: 'runs inner calls',
  parameters: v.object({}),
  output: { schema: v.array(v.unknown()) },
  async execute(_a, exec) {
    const a = await exec.callTool('echo', { text: 'inner' });
    const b = await exec.callTool('echo', { text: 5 });
    return [a.ok, b.error?.code ?? null];
  },
});

const brief = async (log: EventLog) =>
  (await log.list('session-1')).map((e) => [e.type, e.surface, e.callId, e.parentCallId ?? null]);

describe('durable log', () => {
  it('a root call appends tool.call then tool.result on the current surface', async () => {
    const log = createMemoryEventLog();
    const registry = createRegistry({ log });
    registry.global.register(echoTool());
    await registry.global.execute([call('c1', 'echo', { text: 'hi' })], { agent });
    const events = await log.list('session-1');
    expect(events.map((e) => [e.type, e.surface, e.callId])).toEqual([
      ['tool.call', 'current', 'c1'],
      ['tool.result', 'current', 'c1'],
    ]);
    expect(events[0]?.data).toEqual({ name: 'echo', arguments: { text: 'hi' } });
    expect(events[1]?.data).toMatchObject({
      name: 'echo',
      ok: true,
      content: [{ type: 'text', text: 'hi' }],
      value: 'hi',
    });
    log.close?.();
  });

  it("a batch's results reach the log in model order, whichever settles first", async () => {
    const log = createMemoryEventLog();
    const registry = createRegistry({ log });
    let releaseSlow = (): void => undefined;
    const slowMayEnd = new Promise<void>((resolve) => (releaseSlow = resolve));
    const finished: string[] = [];
    registry.global.register(
      defineTool({
        name: 'wait',
        description: 'ends when told to (slow) or at once',
        parameters: v.object({ slow: v.boolean() }),
        output: { schema: v.string() },
        isConcurrencySafe: () => true,
        async execute({ slow }, exec) {
          if (slow) await slowMayEnd;
          finished.push(exec.callId);
          return exec.callId;
        },
      }),
    );
    const batch = registry.global.execute(
      [
        call('a', 'wait', { slow: true }),
        call('b', 'wait', { slow: false }),
        call('c', 'wait', { slow: false }),
      ],
      { agent },
    );
    await until(() => finished.length === 2, { what: 'the quick calls to end' });
    releaseSlow();
    await batch;
    expect(finished).toEqual(['b', 'c', 'a']);
    const order = (await log.list('session-1')).filter((e) => e.type === 'tool.result').map((e) => e.callId);
    expect(order).toEqual(['a', 'b', 'c']);
    log.close?.();
  });

  it("a call the store refused to record holds none of the batch's later results back", async () => {
    const stored = createMemoryEventLog();
    // The store refuses the first call's tool.call (as over budget or in an outage), takes the rest.
    const log: EventLog = {
      ...stored,
      append: (events) =>
        events.some((e) => e.type === 'tool.call' && e.callId === 'a')
          ? Promise.reject(new Error('store down'))
          : stored.append(events),
    };
    const registry = createRegistry({ log });
    registry.global.register(echoTool());
    const results = await registry.global.execute(
      [call('a', 'echo', { text: '1' }), call('b', 'echo', { text: '2' }), call('c', 'echo', { text: '3' })],
      { agent },
    );
    expect(results.map((r) => r.error?.code ?? 'ok')).toEqual(['STORE_FAILED', 'ok', 'ok']);
    await stored.flush();
    const logged = await stored.list('session-1');
    const of = (type: string) => logged.filter((e) => e.type === type).map((e) => e.callId);
    expect(of('tool.call')).toEqual(['b', 'c']);
    expect(of('tool.result')).toEqual(['b', 'c']);
    expect(await stored.unfinishedCalls()).toEqual([]);
    await stored.close();
  });

  it('failed and denied calls still log an error result with structured detail', async () => {
    const log = createMemoryEventLog();
    const registry = createRegistry({ log });
    registry.global.register(echoTool());
    registry.global.on('tools/pre-execute', (c) =>
      c.id === 'c2' ? { kind: 'deny', reason: 'no', userReason: 'blocked by admin' } : undefined,
    );
    await registry.global.execute([call('c1', 'nope'), call('c2', 'echo', { text: 'x' })], { agent });
    const results = (await log.list('session-1')).filter((e) => e.type === 'tool.result').map((e) => e.data);
    expect(results).toEqual([
      expect.objectContaining({ ok: false, error: expect.objectContaining({ code: 'UNKNOWN_TOOL' }) }),
      expect.objectContaining({
        ok: false,
        content: [{ type: 'text', text: 'Error: no' }],
        error: { code: 'DENIED', message: 'no', userReason: 'blocked by admin' },
      }),
    ]);
    log.close?.();
  });

  it('inner calls are log-only events linked to their parent call', async () => {
    const log = createMemoryEventLog();
    const registry = createRegistry({ log });
    registry.global.register(echoTool());
    registry.global.register(nested);
    const [r] = await registry.global.execute([call('p', 'prog')], { agent });
    expect(r?.value).toEqual([true, 'INVALID_ARGUMENTS']);
    expect(await brief(log)).toEqual([
      ['tool.call', 'current', 'p', null],
      ['tool.call', 'log-only', 'p.1', 'p'],
      ['tool.result', 'log-only', 'p.1', 'p'],
      ['tool.call', 'log-only', 'p.2', 'p'],
      ['tool.result', 'log-only', 'p.2', 'p'],
      ['tool.result', 'current', 'p', null],
    ]);
    log.close?.();
  });

  it('log: null records nothing for programmatic calls outside a step', async () => {
    const log = createMemoryEventLog();
    const registry = createRegistry({ log });
    registry.global.register(echoTool());
    await registry.global.execute([call('c1', 'echo', { text: 'x' })], { agent, log: null });
    expect(await log.list('session-1')).toEqual([]);
    log.close?.();
  });

  it('a call that cannot be recorded is not run', async () => {
    let ran = false;
    const broken: EventLog = {
      append: () => {
        throw new Error('disk full');
      },
      flush: async () => {},
      list: async () => [],
      subscribe: () => () => {},
    };
    const registry = createRegistry({ log: broken });
    registry.global.register(
      defineTool({
        name: 't',
        description: 'd',
        parameters: v.object({}),
        output: { schema: v.null() },
        execute: () => {
          ran = true;
          return null;
        },
      }),
    );
    const [r] = await registry.global.execute([call('c1', 't')], { agent });
    expect(r?.error?.code).toBe('STORE_FAILED');
    expect(ran).toBe(false);
  });
});

describe('inner calls (exec.callTool)', () => {
  it('concurrency-safe inner calls overlap; exclusive ones run alone', async () => {
    const registry = createRegistry();
    const stats = { now: 0, max: 0 };
    const mk = (name: string, safe: boolean) =>
      defineTool({
        name,
        description: 'd',
        parameters: v.object({}),
        output: { schema: v.null() },
        isConcurrencySafe: () => safe,
        async execute() {
          stats.max = Math.max(stats.max, ++stats.now);
          await tick(3);
          stats.now--;
          return null;
        },
      });
    registry.global.register(mk('safe', true));
    registry.global.register(mk('excl', false));
    registry.global.register(
      defineTool({
        name: 'prog',
        description: 'd',
        parameters: v.object({ tool: v.string() }),
        output: { schema: v.null() },
        async execute(args, exec) {
          await Promise.all([1, 2, 3, 4].map(() => exec.callTool(args.tool, {})));
          return null;
        },
      }),
    );
    await registry.global.execute([call('p1', 'prog', { tool: 'safe' })], { agent });
    expect(stats.max).toBe(4);
    stats.max = 0;
    await registry.global.execute([call('p2', 'prog', { tool: 'excl' })], { agent });
    expect(stats.max).toBe(1);
  });

  it('inner calls use the batch tool set: a conditional tool outside the set is UNKNOWN_TOOL', async () => {
    const registry = createRegistry();
    registry.global.register(echoTool('hidden'), { when: () => false });
    registry.global.register(
      defineTool({
        name: 'prog',
        description: 'd',
        parameters: v.object({}),
        output: { schema: v.string() },
        async execute(_a, exec) {
          return (await exec.callTool('hidden', { text: 'x' })).error?.code ?? 'ok';
        },
      }),
    );
    const set = await registry.global.resolve({ agent });
    const [r] = await registry.global.execute([call('p', 'prog')], { agent, toolSet: set });
    expect(r?.value).toBe('UNKNOWN_TOOL');
  });
});
