// File names as bytes, carried in JavaScript strings. Linux names are byte strings and need not be
// UTF-8; JSON, our wire format, carries strings. A name travels as the string `fromBytes` makes:
// valid UTF-8 decodes as usual, and each byte that is not part of a valid UTF-8 sequence becomes one
// lone low surrogate U+DC80..U+DCFF (Python's "surrogateescape"). `toBytes` reverses it exactly.
// Invariants: toBytes(fromBytes(b)) equals b for every byte string b; a string without lone
// surrogates is plain UTF-8 both ways; any other lone surrogate is not a name (toBytes throws).
// Shared by the host and sandboxd (bundled into the image): only node:buffer, runs on Node 18.

import { isUtf8 } from 'node:buffer';

/** Thrown by toBytes for a string that no byte string maps to. */
export class NameError extends Error {
  override name = 'NameError';
}

const SURROGATE = /[\uD800-\uDFFF]/;

/** Length of the valid UTF-8 sequence at `i`, or 0 when the byte there does not start one. */
const sequenceAt = (b: Uint8Array, i: number): number => {
  const c = b[i] as number;
  if (c < 0x80) return 1;
  let len: number;
  let lo = 0x80;
  let hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) len = 2;
  else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c === 0xe0) lo = 0xa0;
    if (c === 0xed) hi = 0x9f; // U+D800..U+DFFF are not characters
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c === 0xf0) lo = 0x90;
    if (c === 0xf4) hi = 0x8f;
  } else return 0;
  if (i + len > b.length) return 0;
  const second = b[i + 1] as number;
  if (second < lo || second > hi) return 0;
  for (let k = 2; k < len; k++) {
    const x = b[i + k] as number;
    if (x < 0x80 || x > 0xbf) return 0;
  }
  return len;
};

/** The string form of a byte name (see the header). */
export const fromBytes = (bytes: Uint8Array): string => {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (isUtf8(buf)) return buf.toString('utf8'); // the common case, checked natively
  let out = '';
  let start = 0; // start of the valid run not yet decoded
  let i = 0;
  while (i < buf.length) {
    const len = sequenceAt(buf, i);
    if (len > 0) {
      i += len;
      continue;
    }
    out += buf.toString('utf8', start, i) + String.fromCharCode(0xdc00 + (buf[i] as number));
    i++;
    start = i;
  }
  return start === 0 ? buf.toString('utf8') : out + buf.toString('utf8', start);
};

/** The bytes of a name in string form; throws NameError for a lone surrogate outside U+DC80..U+DCFF. */
export const toBytes = (name: string): Buffer => {
  if (!SURROGATE.test(name)) return Buffer.from(name, 'utf8');
  const parts: Buffer[] = [];
  let start = 0;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    const next = name.charCodeAt(i + 1);
    if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      i++; // a surrogate pair: an ordinary character
      continue;
    }
    if (c < 0xdc80 || c > 0xdcff) throw new NameError('a name holds a lone surrogate that is no byte');
    parts.push(Buffer.from(name.slice(start, i), 'utf8'), Buffer.of(c - 0xdc00));
    start = i + 1;
  }
  parts.push(Buffer.from(name.slice(start), 'utf8'));
  return Buffer.concat(parts);
};

/** True when the name's bytes are not valid UTF-8 (it holds an escaped byte). */
export const isRawName = (name: string): boolean =>
  SURROGATE.test(name) && /(?<![\uD800-\uDBFF])[\uDC80-\uDCFF]/.test(name);

/** Byte length of a name in string form (an escaped byte counts one; an invalid surrogate three, as UTF-8 would write it). */
export const byteLengthOf = (name: string): number => {
  if (!SURROGATE.test(name)) return Buffer.byteLength(name);
  try {
    return toBytes(name).length;
  } catch {
    return Buffer.byteLength(name);
  }
};
