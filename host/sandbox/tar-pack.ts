// Packing a download into an uncompressed tar (ustar; a PAX record carries what ustar cannot hold),
// pulled: each piece of the archive is made only when the consumer asks for the next, so a file's
// next piece is read from the sandbox only once the previous one has left (download.ts).
// Why not tar-stream's pack (its extract parses our uploads): it is pushed, with buffers of its own
// between the reads and the consumer, so reads ran ahead of the response.
// Invariants: only files and directories are packed (the caller listed and checked them); a file is
// written with exactly its declared size: a source that ends early is padded with zeros (a file that
// shrank while it was read, as GNU tar does), one that runs long is cut. Names are written as the
// bytes they stand for (byte-names.ts), so a name that is not UTF-8 leaves byte-exact: in the ustar
// fields when it fits, else in a GNU long-name record (a PAX path would have to be UTF-8).

import { Readable } from 'node:stream';
import { byteLengthOf, isRawName, toBytes } from '../../sandbox-wire/byte-names.ts';

export interface PackEntry {
  /** Relative name inside the archive; a directory's ends with '/'. */
  name: string;
  type: 'file' | 'directory';
  mode: number;
  mtimeMs?: number;
  /** Bytes of a file's content (0 for a directory). */
  size?: number;
  /** A file's content, pulled piece by piece; called once, when the entry's turn comes. */
  content?: () => AsyncIterable<Buffer>;
}

const BLOCK = 512;
const ZEROS = Buffer.alloc(64 * 1024);
/** Largest number a 12-byte octal field holds (11 digits): larger sizes go in a PAX record. */
const MAX_OCTAL_11 = 0o77777777777;

const octal = (n: number, width: number): string => `${n.toString(8).padStart(width - 1, '0')}\0`;

interface Header {
  name: string;
  prefix: string;
  type: '0' | '5' | 'x' | 'L';
  mode: number;
  uid: number;
  gid: number;
  size: number;
  mtime: number;
}

/** One 512-byte ustar header (names are their bytes, cut when too long: a record before it holds the whole). */
const encode = (h: Header): Buffer => {
  const b = Buffer.alloc(BLOCK);
  toBytes(h.name).copy(b, 0, 0, 100);
  b.write(octal(h.mode, 8), 100, 'ascii');
  b.write(octal(h.uid, 8), 108, 'ascii');
  b.write(octal(h.gid, 8), 116, 'ascii');
  b.write(octal(h.size > MAX_OCTAL_11 ? 0 : h.size, 12), 124, 'ascii');
  b.write(octal(Math.min(h.mtime, MAX_OCTAL_11), 12), 136, 'ascii');
  b.write(h.type, 156, 'ascii');
  b.write('ustar\u000000', 257, 'ascii');
  toBytes(h.prefix).copy(b, 345, 0, 155);
  b.write(' '.repeat(8), 148, 'ascii');
  let sum = 0;
  for (const byte of b) sum += byte;
  b.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return b;
};

/** A name split into ustar's prefix and name fields, or undefined when it fits neither way. */
const ustarName = (name: string): { prefix: string; name: string } | undefined => {
  if (byteLengthOf(name) <= 100) return { prefix: '', name };
  const body = name.endsWith('/') ? name.slice(0, -1) : name;
  for (let i = body.indexOf('/'); i !== -1; i = body.indexOf('/', i + 1)) {
    const prefix = name.slice(0, i);
    const rest = name.slice(i + 1);
    if (byteLengthOf(prefix) <= 155 && byteLengthOf(rest) <= 100) return { prefix, name: rest };
  }
  return undefined;
};

/** One PAX record, `<length> <key>=<value>\n`, whose length counts its own digits. */
const paxRecord = (key: string, value: string): string => {
  const body = ` ${key}=${value}\n`;
  const bytes = Buffer.byteLength(body);
  let length = bytes + String(bytes).length;
  if (String(length).length !== String(bytes).length) length = bytes + String(length).length;
  return `${length}${body}`;
};

const padding = (size: number): Buffer => ZEROS.subarray(0, (BLOCK - (size % BLOCK)) % BLOCK);

/** The header blocks of one entry: a PAX header first when the name or size does not fit ustar. */
const headerOf = (e: PackEntry, size: number, owner: { uid: number; gid: number }): Buffer => {
  const fields = {
    mode: e.mode & 0o777,
    uid: owner.uid,
    gid: owner.gid,
    mtime: Math.max(0, Math.floor((e.mtimeMs ?? Date.now()) / 1000)),
  };
  const type = e.type === 'directory' ? '5' : '0';
  const split = ustarName(e.name);
  // A long name that is not UTF-8 goes in a GNU long-name record, byte for byte.
  const longName =
    !split && isRawName(e.name) ? Buffer.concat([toBytes(e.name), Buffer.alloc(1)]) : undefined;
  const records = [
    split || longName ? '' : paxRecord('path', e.name),
    size > MAX_OCTAL_11 ? paxRecord('size', String(size)) : '',
  ].join('');
  const main = encode({ ...fields, ...(split ?? { prefix: '', name: e.name }), type, size });
  const blocks: Buffer[] = [];
  if (longName) {
    const header = encode({ ...fields, prefix: '', name: '././@LongLink', type: 'L', size: longName.length });
    blocks.push(header, longName, padding(longName.length));
  }
  if (records !== '') {
    const pax = Buffer.from(records);
    const paxName = `PaxHeader/${e.name.split('/').filter(Boolean).pop() ?? ''}`;
    const paxHeader = encode({ ...fields, prefix: '', name: paxName, type: 'x', size: pax.length });
    blocks.push(paxHeader, pax, padding(pax.length));
  }
  return blocks.length === 0 ? main : Buffer.concat([...blocks, main]);
};

/** The tar's bytes, one piece per pull: headers, then each file's content as its source yields it. */
async function* tarOf(
  source: Iterable<PackEntry> | AsyncIterable<PackEntry>,
  owner: { uid: number; gid: number },
): AsyncGenerator<Buffer> {
  for await (const e of source) {
    const size = e.type === 'file' ? (e.size ?? 0) : 0;
    yield headerOf(e, size, owner);
    if (e.type !== 'file') continue;
    let written = 0;
    if (e.content && size > 0) {
      for await (const piece of e.content()) {
        const part = piece.length > size - written ? piece.subarray(0, size - written) : piece;
        written += part.length;
        if (part.length > 0) yield part;
        if (written >= size) break; // leaving the loop ends the source: it reads no further
      }
    }
    while (written < size) {
      const zeros = ZEROS.subarray(0, Math.min(ZEROS.length, size - written));
      written += zeros.length;
      yield zeros;
    }
    if (size % BLOCK !== 0) yield padding(size);
  }
  yield ZEROS.subarray(0, 2 * BLOCK);
}

/**
 * Packs entries (already checked: files and directories only) into an uncompressed tar stream that
 * reads nothing ahead: its high-water mark is 0, so each piece is made when the reader asks for it,
 * and destroying the stream ends the content source being read.
 */
export const packEntries = (
  source: Iterable<PackEntry> | AsyncIterable<PackEntry>,
  owner = { uid: 1000, gid: 1000 },
): Readable => Readable.from(tarOf(source, owner), { objectMode: false, highWaterMark: 0 });
