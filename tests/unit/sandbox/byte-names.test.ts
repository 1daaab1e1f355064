import { describe, expect, it } from 'vitest';
import { byteLengthOf, fromBytes, isRawName, toBytes } from '../../../sandbox-wire/byte-names.ts';

const hex = (h: string): Buffer => Buffer.from(h.replace(/ /g, ''), 'hex');

describe('byte names', () => {
  it('keeps valid UTF-8 as it is', () => {
    for (const s of ['plain.txt', 'é', '日本語', '😀 emoji', '']) {
      expect(fromBytes(Buffer.from(s))).toBe(s);
      expect(toBytes(s).equals(Buffer.from(s))).toBe(true);
      expect(isRawName(s)).toBe(false);
    }
  });

  it('round-trips every byte string exactly, including invalid UTF-8', () => {
    const cases = [
      hex('ff'),
      hex('66 6f 80 6f'),
      hex('c3'),
      hex('c3 28'),
      hex('e2 82'),
      hex('ed a0 80'), // an encoded surrogate is not UTF-8
      hex('f4 90 80 80'), // beyond U+10FFFF
      hex('c0 af'), // overlong '/'
      hex('f0 9f 98 80 ff c3 a9'),
    ];
    for (let n = 0; n < 2000; n++) {
      const b = Buffer.alloc(1 + (n % 9));
      for (let i = 0; i < b.length; i++) b[i] = (n * 7919 + i * 104729) % 256;
      cases.push(b);
    }
    for (const b of cases) {
      const s = fromBytes(b);
      expect(toBytes(s).equals(b), b.toString('hex')).toBe(true);
      expect(byteLengthOf(s)).toBe(b.length);
      // JSON (the wire) keeps lone surrogates.
      expect(JSON.parse(JSON.stringify(s))).toBe(s);
    }
    expect(isRawName(fromBytes(hex('61 ff')))).toBe(true);
  });

  it('refuses a lone surrogate that stands for no byte', () => {
    expect(() => toBytes('a\uD800b')).toThrow();
    expect(() => toBytes('\uDC10')).toThrow();
  });
});
