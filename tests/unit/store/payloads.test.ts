// Splitting event data into inline JSON and payloads: exact round trips under JSON semantics,
// pointers for awkward keys, and bounded work on hostile shapes.
import { describe, expect, it } from 'vitest';
import {
  mayExceed,
  payloadText,
  resolveData,
  splitData,
  splitValue,
  topRefs,
} from '../../../host/store/payloads.ts';

const reader = (blobs: { sha256: string; json: string }[]) => (sha: string) =>
  blobs.find((b) => b.sha256 === sha)?.json;
const roundTrip = (value: unknown, inline = 64) => {
  const split = splitValue(value, inline);
  return { split, back: resolveData(split.json, split.refs, reader(split.blobs)) };
};

describe('event payloads', () => {
  it('leaves small data alone and round-trips large data exactly, as JSON.stringify would', () => {
    expect(splitData('{"a":1}', 64)).toEqual({ json: '{"a":1}', refs: [], blobs: [] });
    const value = {
      name: 'tool',
      skip: undefined,
      when: new Date(0),
      list: [1, undefined, 'x'.repeat(100), { deep: 'y'.repeat(100) }],
      'a/b~c': 'z'.repeat(100),
    };
    const { split, back } = roundTrip(value);
    expect(back).toEqual(JSON.parse(JSON.stringify(value)));
    expect(split.json.length).toBeLessThanOrEqual(64 * 4);
    expect(split.refs.map((r) => r.pointer)).toContain('/a~1b~0c');
    expect(JSON.parse(payloadText(split.refs, '/a~1b~0c', reader(split.blobs)))).toBe('z'.repeat(100));
  });

  it('stores a repeated value once and lists only the outermost markers', () => {
    const big = 'q'.repeat(500);
    const { split, back } = roundTrip({ a: big, b: [big, big], c: { d: big, e: 'w'.repeat(80) } }, 200);
    expect(back).toEqual({ a: big, b: [big, big], c: { d: big, e: 'w'.repeat(80) } });
    expect(split.blobs.filter((b) => b.json === JSON.stringify(big))).toHaveLength(1);
    for (const ref of topRefs(split.refs)) expect(split.json).toContain(`"sha256:${ref.sha256}"`);
  });

  it('bounds work and size on deep nesting and on many small members', () => {
    let deep: unknown = 'leaf'.repeat(50);
    for (let i = 0; i < 1000; i++) deep = [deep];
    const nested = splitValue({ deep }, 1024);
    expect(nested.json.length).toBeLessThan(1024);
    expect(resolveData(nested.json, nested.refs, reader(nested.blobs))).toEqual(
      JSON.parse(JSON.stringify({ deep })),
    );

    const wide = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, i]));
    const flat = splitValue(wide, 1024);
    expect(flat.refs.map((r) => r.pointer)).toEqual(['']);
    expect(JSON.parse(payloadText(flat.refs, '', reader(flat.blobs)))).toEqual(wide);
  });

  it('refuses pointers that are not listed', () => {
    const split = splitValue({ a: 'x'.repeat(100) }, 64);
    expect(() => payloadText(split.refs, '/b', reader(split.blobs))).toThrow(
      expect.objectContaining({ code: 'NOT_FOUND' }),
    );
  });
});

describe('mayExceed', () => {
  it('says false only for values whose JSON surely fits', () => {
    const inherited = Object.create({ big: 'i'.repeat(500) }) as Record<string, unknown>;
    inherited.own = 1;
    const cases: unknown[] = [
      null,
      1.2345678901234567,
      'x'.repeat(99),
      'x'.repeat(100),
      { name: 'noop', arguments: { n: 1 } },
      [1, undefined, 'é'.repeat(40), { a: [true, false, null] }],
      Array.from({ length: 50 }, (_, i) => i),
      { when: new Date(0) },
      inherited,
      JSON.parse(`${'['.repeat(40)}${']'.repeat(40)}`),
      { ['k'.repeat(120)]: 1 },
    ];
    for (const value of cases) {
      const json = JSON.stringify(value) ?? 'null';
      if (!mayExceed(value, 100)) expect(json.length).toBeLessThanOrEqual(100);
    }
    expect(mayExceed({ name: 'noop', arguments: { n: 1 } }, 100)).toBe(false);
    expect(mayExceed('x'.repeat(200), 100)).toBe(true);
    expect(mayExceed({ when: new Date(0) }, 100)).toBe(true);
  });
});
