// A batch answers with at most its budget of outputs (host/tools/answer-budget.ts): results that fit
// are unchanged, a result past it comes without its output and says where the output is, and the
// log has every result whole.
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { createMemoryEventLog } from '../../../host/store/memory.ts';
import { BATCH_ANSWER_MAX } from '../../../host/tools/answer-budget.ts';
import { createRegistry, defineTool } from '../../../host/tools/index.ts';
import { agent, call } from './helpers.ts';

/** Prints `size` characters (its value and, by default, its content carry them). */
const printer = defineTool({
  name: 'print',
  description: 'prints',
  parameters: v.object({ size: v.number(), fill: v.string() }),
  output: { schema: v.string() },
  isConcurrencySafe: () => true,
  async execute(args) {
    return args.fill.repeat(args.size);
  },
});

describe('a batch answer budget', () => {
  it('answers results past the budget without their output; the log keeps them whole', async () => {
    const log = createMemoryEventLog({ budgetBytes: 256 * 1024 * 1024 });
    const registry = createRegistry({ log });
    registry.global.register(printer);
    const third = Math.floor(BATCH_ANSWER_MAX / 5); // content and value: ~2/5 of the budget a call
    const calls = [
      call('a', 'print', { size: third, fill: 'a' }),
      call('b', 'print', { size: third, fill: 'b' }),
      call('c', 'print', { size: third, fill: 'c' }),
      call('d', 'print', { size: 10, fill: 'd' }),
    ];
    const results = await registry.global.execute(calls, { agent, concurrency: 1 });
    expect(results.map((r) => [r.id, r.ok])).toEqual([
      ['a', true],
      ['b', true],
      ['c', true],
      ['d', true],
    ]);
    expect(results[0]?.value).toBe('a'.repeat(third));
    expect(results[1]?.value).toBe('b'.repeat(third));
    // The third does not fit: no value, one note naming the budget and the log.
    expect(results[2]?.value).toBeUndefined();
    expect(results[2]?.content).toEqual([
      { type: 'text', text: expect.stringContaining('left out of this answer') },
    ]);
    expect(results[2]?.content[0]).toMatchObject({ text: expect.stringContaining('/events') });
    // A small result after it still fits in what is left.
    expect(results[3]?.value).toBe('d'.repeat(10));
    // The log has it whole (a large value as a payload of its event).
    const logged = (await log.list('session-1')).find((e) => e.type === 'tool.result' && e.callId === 'c');
    expect(logged?.data).toMatchObject({ ok: true });
    expect(JSON.stringify(logged)).not.toContain('left out');
  });

  it('a single call is its tool business: answered whole whatever its size', async () => {
    const registry = createRegistry();
    registry.global.register(printer);
    const size = BATCH_ANSWER_MAX;
    const [result] = await registry.global.execute([call('a', 'print', { size, fill: 'x' })], { agent });
    expect(String(result?.value).length).toBe(size);
  });
});
