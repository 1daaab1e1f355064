// Large values of event data, stored apart and once. splitData() walks an event's data bottom-up
// and moves every value whose JSON text is longer than `inlineBytes` into a payload keyed by the
// SHA-256 of that text, leaving the marker `{ "$ref": "sha256:<hex>", "bytes": n }` in its place
// and a PayloadRef that names the place by JSON Pointer. The top level is never moved whole while
// its largest members can be moved instead, so an event's small facts (name, ok, ids, durations)
// stay inline; below MAX_DEPTH a value moves as one unit (bounded work on hostile nesting).
// Invariants: only the pointers listed in refs are markers (data that looks like a marker stays
// data); refs are listed children first, so resolving in reverse order restores nested values;
// resolveData(splitData(x)) deep-equals JSON.parse(JSON.stringify(x)) when nothing was dropped.
import { createHash } from 'node:crypto';
import { SandboxError } from '../errors.ts';
import type { JsonValue } from '../json.ts';
import type { PayloadRef } from './types.ts';

/** Default: values longer than this (JSON characters) are stored as payloads. */
export const DEFAULT_INLINE_BYTES = 16 * 1024;
const MAX_DEPTH = 16;
/** How many top-level members may move before the whole data moves instead. */
const MAX_ROOT_MOVES = 16;
/** About the length of a marker: moving a value shorter than this would not shrink anything. */
const MARKER_CHARS = 110;

export interface PayloadBlob {
  sha256: string;
  /** The value's JSON text (it may hold markers of payloads moved from inside it). */
  json: string;
  bytes: number;
}

export interface SplitData {
  /** The data's JSON text with markers in place of the moved values. */
  json: string;
  /** Children before parents. Empty when nothing moved. */
  refs: PayloadRef[];
  /** One per distinct sha256 among refs. */
  blobs: PayloadBlob[];
}

const escapeToken = (key: string): string => key.replace(/~/g, '~0').replace(/\//g, '~1');
const unescapeToken = (token: string): string => token.replace(/~1/g, '/').replace(/~0/g, '~');

export const markerOf = (ref: Pick<PayloadRef, 'sha256' | 'bytes'>): string =>
  `{"$ref":"sha256:${ref.sha256}","bytes":${ref.bytes}}`;

/** Splits `json` (the data's JSON text) when it is longer than inlineBytes; else returns it as is. */
export const splitData = (json: string, inlineBytes: number): SplitData =>
  json.length <= inlineBytes ? { json, refs: [], blobs: [] } : splitValue(JSON.parse(json), inlineBytes);

/**
 * `left` less about the length of `value`'s JSON, stopping below 0 (-1 when the value has a
 * toJSON or nests past MAX_DEPTH: it is not estimated). Inherited enumerable keys are counted too,
 * which only overestimates. No closure and no per-key own check: this runs on every event.
 */
const remaining = (value: unknown, depth: number, left: number): number => {
  if (typeof value === 'string') return left - value.length - 2;
  if (value === null || typeof value !== 'object') return left - 24;
  if (depth >= MAX_DEPTH || typeof (value as { toJSON?: unknown }).toJSON === 'function') return -1;
  let rest = left - 2;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length && rest >= 0; i++) rest = remaining(value[i], depth + 1, rest);
    return rest;
  }
  for (const key in value) {
    rest = remaining((value as Record<string, unknown>)[key], depth + 1, rest - key.length - 4);
    if (rest < 0) break;
  }
  return rest;
};

/**
 * False only when `value`'s JSON is surely not longer than `limit` (a cheap pre-check that stops
 * early, so a large value is not serialized twice). Errs towards true.
 */
export const mayExceed = (value: unknown, limit: number): boolean => remaining(value, 0, limit) < 0;

/** JSON.stringify's text of a member (undefined when JSON leaves it out). */
const leaf = (value: unknown): string | undefined => JSON.stringify(value);

/** splitData over a value (JSON semantics: undefined members left out, toJSON honoured as a unit). */
export const splitValue = (value: unknown, inlineBytes: number): SplitData => {
  const refs: PayloadRef[] = [];
  const blobs = new Map<string, PayloadBlob>();
  const move = (pointer: string, text: string): string => {
    const bytes = Buffer.byteLength(text);
    const sha256 = createHash('sha256').update(text).digest('hex');
    if (!blobs.has(sha256)) blobs.set(sha256, { sha256, json: text, bytes });
    refs.push({ pointer, sha256, bytes });
    return markerOf({ sha256, bytes });
  };

  /** The JSON text of `value` with its large parts moved; moves the value itself when still large. */
  const walk = (value: unknown, pointer: string, depth: number): string | undefined => {
    const text = members(value, pointer, depth);
    return text !== undefined && text.length > inlineBytes ? move(pointer, text) : text;
  };

  /** [key token, JSON text] of each member JSON keeps, walked. */
  const entriesOf = (value: object, pointer: string, depth: number): [string, string][] => {
    if (Array.isArray(value))
      return value.map((v, i) => [String(i), walk(v, `${pointer}/${i}`, depth + 1) ?? 'null']);
    const out: [string, string][] = [];
    for (const [k, v] of Object.entries(value)) {
      const text = walk(v, `${pointer}/${escapeToken(k)}`, depth + 1);
      if (text !== undefined) out.push([k, text]);
    }
    return out;
  };
  const compose = (isArray: boolean, entries: [string, string][]): string =>
    isArray
      ? `[${entries.map(([, t]) => t).join(',')}]`
      : `{${entries.map(([k, t]) => `${JSON.stringify(k)}:${t}`).join(',')}}`;
  const isUnit = (value: unknown, depth: number): boolean =>
    value === null ||
    typeof value !== 'object' ||
    depth >= MAX_DEPTH ||
    typeof (value as { toJSON?: unknown }).toJSON === 'function';

  const members = (value: unknown, pointer: string, depth: number): string | undefined =>
    isUnit(value, depth)
      ? leaf(value)
      : compose(Array.isArray(value), entriesOf(value as object, pointer, depth));

  if (isUnit(value, 0)) {
    const text = leaf(value) ?? 'null';
    return text.length > inlineBytes
      ? { json: move('', text), refs, blobs: [...blobs.values()] }
      : { json: text, refs, blobs: [] };
  }
  // Top level: walk members, then move the fewest largest remaining ones that make the rest fit;
  // when MAX_ROOT_MOVES cannot, move the whole data instead (an event of many small members).
  const isArray = Array.isArray(value);
  const entries = entriesOf(value as object, '', 0);
  let text = compose(isArray, entries);
  const bySize = entries.map((_, i) => i).sort((a, b) => entries[b]![1].length - entries[a]![1].length);
  let left = text.length;
  let needed = 0;
  while (left > inlineBytes && needed < Math.min(MAX_ROOT_MOVES, bySize.length)) {
    left -= entries[bySize[needed]!]![1].length - MARKER_CHARS;
    needed++;
  }
  if (text.length > inlineBytes && needed > 0 && left <= inlineBytes) {
    for (const index of bySize.slice(0, needed)) {
      const entry = entries[index]!;
      entry[1] = move(`/${escapeToken(entry[0])}`, entry[1]);
    }
    text = compose(isArray, entries);
  }
  if (text.length > inlineBytes) text = move('', text);
  return { json: text, refs, blobs: [...blobs.values()] };
};

/** Top-level refs: those not inside another listed ref (what a reader sees as markers in data). */
export const topRefs = (refs: readonly PayloadRef[]): PayloadRef[] => {
  if (refs.length <= 1) return [...refs];
  const pointers = new Set(refs.map((r) => r.pointer));
  return refs.filter((r) => {
    if (r.pointer === '') return true;
    if (pointers.has('')) return false;
    // Check each ancestor: pointers are at most MAX_DEPTH tokens deep.
    for (let end = r.pointer.lastIndexOf('/'); end > 0; end = r.pointer.lastIndexOf('/', end - 1))
      if (pointers.has(r.pointer.slice(0, end))) return false;
    return true;
  });
};

const isInside = (pointer: string, parent: string): boolean =>
  parent === '' ? pointer !== '' : pointer.startsWith(`${parent}/`);

const tokens = (pointer: string): string[] => pointer.split('/').slice(1).map(unescapeToken);

/** Puts `value` at `pointer` inside `root`, returning the (possibly replaced) root. */
const setAt = (root: JsonValue, pointer: string, value: JsonValue): JsonValue => {
  if (pointer === '') return value;
  const path = tokens(pointer);
  let node = root as { [key: string]: JsonValue } | JsonValue[];
  for (const token of path.slice(0, -1)) {
    node = (node as Record<string, JsonValue>)[token] as typeof node;
    if (node === null || typeof node !== 'object') return root;
  }
  (node as Record<string, JsonValue>)[path.at(-1)!] = value;
  return root;
};

/**
 * Reads `data` (JSON text with markers) back with every stored payload in place; dropped or
 * missing payloads stay markers. `read` returns a payload's JSON text by sha256.
 */
export const resolveData = (
  json: string,
  refs: readonly PayloadRef[],
  read: (sha256: string) => string | undefined,
): JsonValue => {
  let root = JSON.parse(json) as JsonValue;
  // Parents were listed after their children: restore parents first, then what was inside them.
  for (let i = refs.length - 1; i >= 0; i--) {
    const ref = refs[i]!;
    if (ref.dropped) continue;
    const text = read(ref.sha256);
    if (text !== undefined) root = setAt(root, ref.pointer, JSON.parse(text) as JsonValue);
  }
  return root;
};

/**
 * The JSON text of the payload listed at `pointer`, with the payloads nested inside it read back.
 * NOT_FOUND when no such payload is listed or it was not kept.
 */
export const payloadText = (
  refs: readonly PayloadRef[],
  pointer: string,
  read: (sha256: string) => string | undefined,
): string => {
  const ref = refs.find((r) => r.pointer === pointer);
  if (ref === undefined)
    throw new SandboxError('NOT_FOUND', `The event has no stored payload at "${pointer}".`, {
      data: { pointer },
    });
  const text = ref.dropped ? undefined : read(ref.sha256);
  if (text === undefined)
    throw new SandboxError(
      'NOT_FOUND',
      `The payload at "${pointer}" was not kept (its tenant was over its log budget); only its sha256 and size were.`,
      { data: { pointer, sha256: ref.sha256, bytes: ref.bytes } },
    );
  const inner = refs
    .filter((r) => isInside(r.pointer, pointer))
    .map((r) => ({ ...r, pointer: r.pointer.slice(pointer.length) }));
  return inner.length === 0 ? text : JSON.stringify(resolveData(text, inner, read));
};
