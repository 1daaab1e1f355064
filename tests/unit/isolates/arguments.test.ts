// A program's call arguments as the HTTP surface would take them (host/isolates/arguments.ts).
import { describe, expect, it } from 'vitest';
import {
  cleanArguments,
  MAX_ARGUMENT_DEPTH,
  MAX_VALUE_DEPTH,
  nestedDeeperThan,
} from '../../../host/isolates/arguments.ts';

const parsed = (json: string): [unknown, string] => [JSON.parse(json), json];
const nested = (depth: number): string => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

describe('cleanArguments', () => {
  it('drops __proto__, constructor and prototype keys at any depth, escaped or not', () => {
    const [value, json] = parsed(
      '{"x":1,"__proto__":{"p":1},"deep":[{"constructor":{"prototype":{"p":1}},"k":2}],"\\u005f_proto__":3,"prototype":4}',
    );
    expect(cleanArguments(value, json)).toBe(true);
    expect(value).toEqual({ x: 1, deep: [{ k: 2 }] });
    expect(Object.keys(value as object)).toEqual(['x', 'deep']);
  });

  it('refuses nesting past the bound without recursing, and takes it up to the bound', () => {
    expect(cleanArguments(...parsed(nested(MAX_ARGUMENT_DEPTH)))).toBe(true);
    expect(cleanArguments(...parsed(nested(MAX_ARGUMENT_DEPTH + 1)))).toBe(false);
    expect(cleanArguments(...parsed(nested(200_000)))).toBe(false);
    expect(cleanArguments(...parsed('[1,"constructor",{"a":"prototype"}]'))).toBe(true);
  });
});

describe('nestedDeeperThan', () => {
  it('takes values up to the bound and refuses deeper ones, arrays and objects alike, without recursing', () => {
    expect(nestedDeeperThan(JSON.parse(nested(MAX_VALUE_DEPTH)), MAX_VALUE_DEPTH)).toBe(false);
    expect(nestedDeeperThan(JSON.parse(nested(MAX_VALUE_DEPTH + 1)), MAX_VALUE_DEPTH)).toBe(true);
    expect(
      nestedDeeperThan(JSON.parse(`${'['.repeat(200_000)}${']'.repeat(200_000)}`), MAX_VALUE_DEPTH),
    ).toBe(true);
    expect(nestedDeeperThan('x', 0)).toBe(false);
  });

  it('finds the deep branch among wide shallow ones, wherever it is; counts containers, not scalars', () => {
    const deepAt = (i: number) =>
      JSON.parse(
        `{"rows":[${Array.from({ length: 50 }, (_, j) => (j === i ? nested(4) : '{"x":[1]}')).join(',')}]}`,
      );
    // rows (1) + a row (2) + 4 levels inside it: 6 containers deep.
    for (const i of [0, 25, 49]) {
      expect(nestedDeeperThan(deepAt(i), 5), `row ${i}`).toBe(true);
      expect(nestedDeeperThan(deepAt(i), 6), `row ${i}`).toBe(false);
    }
    expect(nestedDeeperThan({}, 0)).toBe(true);
    expect(nestedDeeperThan({}, 1)).toBe(false);
    expect(nestedDeeperThan({ a: [] }, 1)).toBe(true);
    expect(nestedDeeperThan({ a: 'x'.repeat(10), b: 1, c: null }, 1)).toBe(false);
    expect(nestedDeeperThan(null, 0)).toBe(false);
  });
});
