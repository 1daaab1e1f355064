// Text work over model-controlled input for the file tools (read, edit, str_replace_editor): file
// contents up to LIMITS.editBytes / LIMITS.readBytes (10 MiB) and arguments up to the API's body
// cap. It runs on the control plane's one event loop, shared by every tenant, so:
// - every function is linear in its input (no split of a whole file, no search that can loop on an
//   empty needle, no replacement whose output size is unchecked);
// - loops yield to the event loop (setImmediate) after SLICE_MS of work, so one call holds the loop
//   for about SLICE_MS at a time however large its input; the remaining atomic steps are one UTF-8
//   decode or encode of at most 10 MiB (measured ~20-50 ms here);
// - an input past its bound is refused before the work starts, with a stable code
//   (INVALID_ARGUMENTS for an empty needle, FILE_TOO_LARGE for a result past the file bound).
import { setImmediate as nextTurn } from 'node:timers/promises';
import { SandboxError } from '../../errors.ts';

/** A path (or other argument) as error messages echo it: at most 200 characters of it. */
export const shownPath = (path: string): string => (path.length > 200 ? `${path.slice(0, 200)}…` : path);

/** Work between two yields to the event loop, in ms. */
export const SLICE_MS = 10;

/** Yields to the event loop when the current slice of work is used up; checks cancellation then. */
export type Slicer = () => Promise<void>;

export const slicer = (signal?: AbortSignal): Slicer => {
  let since = performance.now();
  return async () => {
    if (performance.now() - since < SLICE_MS) return;
    await nextTurn();
    signal?.throwIfAborted();
    since = performance.now();
  };
};

/** How often (in iterations) tight loops ask the slicer; a power of two minus one, as a mask. */
const EVERY = 0xfff;

/** Where a needle occurs: how often (without overlaps) and on which lines. */
export interface Occurrences {
  count: number;
  /** 1-based lines where occurrences start, ascending, without repeats: at most MAX_LISTED of them. */
  lines: number[];
  /** True when occurrences start on more lines than `lines` lists. */
  more: boolean;
}

/** Lines listed in Occurrences.lines. */
export const MAX_LISTED = 20;

/** Occurrences of a non-empty `needle` in `text`; their lines come from one pass over the text. */
export const findOccurrences = async (text: string, needle: string, slice: Slicer): Promise<Occurrences> => {
  if (needle.length === 0)
    throw new SandboxError('INVALID_ARGUMENTS', 'The text to search for is empty; give the exact text.');
  let count = 0;
  const lines: number[] = [];
  let more = false;
  let line = 1;
  let newline = text.indexOf('\n');
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) {
    if (!more) {
      while (newline !== -1 && newline < at) {
        if ((++line & EVERY) === 0) await slice();
        newline = text.indexOf('\n', newline + 1);
      }
      if (lines.at(-1) !== line) {
        if (lines.length < MAX_LISTED) lines.push(line);
        else more = true;
      }
    }
    if ((++count & EVERY) === 0) await slice();
  }
  return { count, lines, more };
};

/** "line 3", "lines 3 and 8", "lines 3, 8, 12, …" for an Occurrences. */
export const linesList = ({ lines, more }: Occurrences): string => {
  if (lines.length === 1) return `line ${lines[0]}`;
  if (more) return `lines ${lines.join(', ')}, …`;
  return `lines ${lines.slice(0, -1).join(', ')} and ${lines.at(-1)}`;
};

/**
 * `text` with every occurrence of `needle` replaced (or only the first when `count` is 1), after
 * checking that the result stays within `maxChars` (FILE_TOO_LARGE otherwise, naming `what`).
 */
export const replaceOccurrences = async (
  text: string,
  needle: string,
  replacement: string,
  count: number,
  maxChars: number,
  what: string,
  slice: Slicer,
): Promise<string> => {
  const size = text.length + count * (replacement.length - needle.length);
  if (size > maxChars)
    throw new SandboxError(
      'FILE_TOO_LARGE',
      `The edit would make ${what} ${size} characters long, more than the ${maxChars} the editing tools write; make a smaller change, or use bash.`,
      { data: { size, maxChars } },
    );
  if (count === 1) {
    const at = text.indexOf(needle);
    return at === -1 ? text : text.slice(0, at) + replacement + text.slice(at + needle.length);
  }
  const pieces: string[] = [];
  let parts: string[] = [];
  let from = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, from)) {
    parts.push(text.slice(from, at), replacement);
    from = at + needle.length;
    if ((parts.length & EVERY) === 0) {
      pieces.push(parts.join(''));
      parts = [];
      await slice();
    }
  }
  parts.push(text.slice(from));
  pieces.push(parts.join(''));
  return pieces.join('');
};

/** Number of `\n` characters in a string, for line counts of arguments. */
export const countNewlines = async (text: string, slice: Slicer): Promise<number> => {
  let count = 0;
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) {
    if ((++count & EVERY) === 0) await slice();
  }
  return count;
};

/** Where a range of lines lies in a file's bytes, and how many lines the file has. */
export interface LineSpan {
  /** Lines in the file, counted as the tool counts them (see scanLines). */
  total: number;
  /** Byte offset where the first asked line starts (the end of the file when it is past the end). */
  start: number;
  /** Byte offset just past the last asked line that exists (before its `\n`). */
  end: number;
  /** Lines inside [start, end). */
  lines: number;
}

const NL = 0x0a;
/** Bytes scanned between two asks of the slicer. */
const SCAN_CHUNK = 1 << 16;

/**
 * Finds lines `first` … `first + count - 1` (1-based) in `data` without decoding it. Lines are the
 * pieces between `\n` bytes, and a final `\n` ends the last line: "a\n" is one line, "a\n\n" two,
 * and an empty file has none (as `read` and `str_replace_editor` count, and `wc -l` for files that
 * end in a newline). UTF-8 never uses the byte 0x0a inside a character, so the span decodes on its own.
 */
export const scanLines = async (
  data: Uint8Array,
  first: number,
  count: number,
  slice: Slicer,
): Promise<LineSpan> => {
  if (data.length === 0) return { total: 0, start: 0, end: 0, lines: 0 };
  const body = data[data.length - 1] === NL ? data.length - 1 : data.length;
  const last = first + count - 1;
  let line = 1;
  let start = first === 1 ? 0 : -1;
  let end = -1;
  for (let from = 0; from < body; from += SCAN_CHUNK) {
    const to = Math.min(body, from + SCAN_CHUNK);
    for (let i = from; i < to; i++) {
      if (data[i] !== NL) continue;
      if (line === last) end = i;
      line++;
      if (line === first) start = i + 1;
    }
    await slice();
  }
  if (start === -1) return { total: line, start: body, end: body, lines: 0 };
  if (end === -1) end = body;
  return { total: line, start, end, lines: Math.min(last, line) - first + 1 };
};
