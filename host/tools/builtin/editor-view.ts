// What str_replace_editor shows: a directory's entries two levels deep, a file's numbered lines
// (all of them or a view_range, in a file of any size), and the numbered snippet after an edit.
// Output is capped at LIMITS.readLines lines (LIMITS.viewEntries entries) and LIMITS.viewChars
// characters (each line cut at LIMITS.lineChars), and whatever is left out is said, with the
// view_range that shows it. A directory view lists at most LISTED_SUBDIRS subdirectories.
// Bounds (the work runs on the control plane's event loop, see text.ts): a file the editor loads
// (up to LIMITS.editBytes) is scanned once without decoding; only the lines shown are decoded. A
// larger file is never loaded: view reads it in CHUNK_BYTES pieces from its start until it has
// found the lines asked, at most LIMITS.viewScanBytes of it, and decodes at most SPAN_BYTES.
import { SandboxError } from '../../errors.ts';
import type { DirEntry, FileStat, SandboxFs } from '../../sandbox/types.ts';
import { looksBinary } from './read.ts';
import { LIMITS } from './services.ts';
import { type Slicer, scanLines } from './text.ts';

const NL = 0x0a;
const CHUNK_BYTES = 1 << 20;
const SPAN_BYTES = 1 << 20;

/** Lines of context an edit's snippet shows around the edited lines (as OpenHands' editor). */
export const SNIPPET_CONTEXT = 4;

const cut = (line: string): string =>
  line.length > LIMITS.lineChars ? `${line.slice(0, LIMITS.lineChars)} [line cut]` : line;

/**
 * `cat -n`-style lines from line `first`: as many of `lines` as fit in LIMITS.viewChars (at least
 * one), and how many that was.
 */
export const numbered = (lines: readonly string[], first: number): { text: string; shown: number } => {
  const out: string[] = [];
  let chars = 0;
  for (const line of lines) {
    const row = `${String(first + out.length).padStart(6, ' ')}\t${cut(line)}`;
    if (out.length > 0 && chars + row.length + 1 > LIMITS.viewChars) break;
    out.push(row);
    chars += row.length + 1;
  }
  return { text: out.join('\n'), shown: out.length };
};

/** The editor's refusal of a binary file. */
export const binaryFile = (path: string): SandboxError =>
  new SandboxError(
    'BINARY_FILE',
    `${path} is a binary file; str_replace_editor views and edits text files (bash with file or xxd inspects others).`,
  );

const invalidRange = (range: readonly number[], why: string): SandboxError =>
  new SandboxError('INVALID_ARGUMENTS', `view_range [${range.join(', ')}] ${why}`);

/** Subdirectories whose entries a directory view lists (one sandbox round trip each). */
const LISTED_SUBDIRS = 100;

const visible = (entries: readonly DirEntry[]): DirEntry[] => entries.filter((e) => !e.name.startsWith('.'));
const shownEntry = (dir: string, e: DirEntry): string =>
  `${dir}/${e.name}${e.type === 'directory' ? '/' : ''}`;

/**
 * A directory as Anthropic's and OpenHands' editors show it: non-hidden files and directories up
 * to 2 levels deep, as paths (directories end in `/`), at most LIMITS.viewEntries of them, and how
 * many hidden entries the directory itself has.
 */
export const viewDirectory = async (
  fs: SandboxFs,
  path: string,
  range: readonly number[] | undefined,
): Promise<string> => {
  if (range !== undefined)
    throw invalidRange(range, `is for files; ${path} is a directory. View it without view_range.`);
  const entries = await fs.list(path);
  const top = visible(entries);
  const lines: string[] = [];
  let chars = 0;
  let full = false;
  /** Adds an entry's line; false once the view is full. */
  const add = (line: string): boolean => {
    full ||= lines.length >= LIMITS.viewEntries || chars + line.length > LIMITS.viewChars;
    if (full) return false;
    lines.push(line);
    chars += line.length + 1;
    return true;
  };
  let expanded = 0;
  let unlisted = 0;
  for (const entry of top) {
    if (!add(shownEntry(path, entry))) break;
    if (entry.type !== 'directory') continue;
    if (++expanded > LISTED_SUBDIRS) {
      unlisted++;
      continue;
    }
    const dir = `${path}/${entry.name}`;
    for (const e of visible(await fs.list(dir).catch(() => []))) if (!add(shownEntry(dir, e))) break;
  }
  const notes: string[] = [];
  if (full)
    notes.push(`[listing cut after ${lines.length} entries; view a subdirectory, or use bash ls or find]`);
  if (unlisted > 0)
    notes.push(`[the entries of ${unlisted} more subdirectories are not listed; view them one at a time]`);
  const hidden = entries.length - top.length;
  if (hidden > 0)
    notes.push(
      `${hidden} hidden files/directories in this directory are excluded. You can use 'ls -la ${path}' to see them.`,
    );
  return [
    `Here's the files and directories up to 2 levels deep in ${path}, excluding hidden items:`,
    `${path}/`,
    ...lines,
    ...(notes.length > 0 ? ['', ...notes] : []),
  ].join('\n');
};

/** The lines a view asked for: [start, end] with end -1 for the end of the file. */
const rangeOf = (range: readonly number[] | undefined): [number, number] => {
  const [start = 1, end = -1] = range ?? [];
  if (range !== undefined && start < 1)
    throw invalidRange(range, `starts at ${start}; lines are numbered from 1.`);
  if (range !== undefined && end !== -1 && end < start)
    throw invalidRange(
      range,
      `ends before it starts; give [start, end] with end >= start, or -1 for the end of the file.`,
    );
  return [start, end];
};

/** The tail note of a view that shows less than was asked. */
const more = (start: number, shown: number, end: number, of: string): string =>
  `[showing lines ${start}-${start + shown - 1} ${of}; view with view_range [${start + shown}, ${end}] to see more]`;

/** A loaded file's lines (`data` is the whole file), with line numbers. */
export const viewLoaded = async (
  data: Buffer,
  path: string,
  range: readonly number[] | undefined,
  slice: Slicer,
): Promise<string> => {
  const [start, end] = rangeOf(range);
  const asked = end === -1 ? Number.POSITIVE_INFINITY : end - start + 1;
  const span = await scanLines(data, start, Math.min(asked, LIMITS.readLines), slice);
  if (span.total === 0) {
    if (range !== undefined) throw invalidRange(range, `cannot be shown: ${path} is empty.`);
    return `(${path} is empty)`;
  }
  if (start > span.total)
    throw invalidRange(
      range ?? [],
      `starts past the end: ${path} has ${span.total} lines (view_range [1, ${span.total}]).`,
    );
  const last = end === -1 ? span.total : Math.min(end, span.total);
  const { text, shown } = numbered(data.subarray(span.start, span.end).toString('utf8').split('\n'), start);
  const note =
    end > span.total ? `NOTE: ${path} has ${span.total} lines; showing up to line ${span.total}.\n` : '';
  if (start + shown - 1 < last) return `${note}${text}\n${more(start, shown, end, `of ${span.total}`)}`;
  return `${note}${text}`;
};

/**
 * Lines of a file too large to load (`stat.size` > LIMITS.editBytes), read from its start in
 * pieces until the asked lines are found. Its line count is known only when the scan reached its end.
 */
export const viewLarge = async (
  fs: SandboxFs,
  stat: FileStat,
  range: readonly number[] | undefined,
  slice: Slicer,
): Promise<string> => {
  const [start, end] = rangeOf(range);
  const path = stat.path;
  const last = end === -1 ? Number.POSITIVE_INFINITY : end;
  const limit = Math.min(stat.size, LIMITS.viewScanBytes);
  let line = 1;
  let from = start === 1 ? 0 : -1;
  let to = -1;
  let cutAt = false;
  let offset = 0;
  let lastByte = -1;
  while (offset < limit && to === -1) {
    const chunk = await fs.readFile(path, { offset, length: Math.min(CHUNK_BYTES, limit - offset) });
    if (chunk.length === 0) break;
    if (offset === 0 && looksBinary(chunk)) throw binaryFile(path);
    for (let i = chunk.indexOf(NL); i !== -1; i = chunk.indexOf(NL, i + 1)) {
      if (line === last) {
        to = offset + i;
        break;
      }
      line++;
      if (line === start) from = offset + i + 1;
    }
    offset += chunk.length;
    lastByte = chunk[chunk.length - 1] as number;
    if (from !== -1 && to === -1 && offset - from >= SPAN_BYTES) {
      to = from + SPAN_BYTES;
      cutAt = true;
    }
    await slice();
  }
  // Only a scan that went through the whole file without stopping knows its line count.
  const total = to === -1 && offset >= stat.size ? line - (lastByte === NL ? 1 : 0) : undefined;
  if (total !== undefined && start > total)
    throw invalidRange(range ?? [], `starts past the end: ${path} has ${total} lines.`);
  if (from === -1)
    throw invalidRange(
      range ?? [],
      `starts beyond the first ${LIMITS.viewScanBytes} bytes of ${path} (a file of ${stat.size} bytes), as far as view reads; use bash (sed -n '${start},${start + 99}p' ${path}) to see it.`,
    );
  if (to === -1) to = offset;
  const bytes = await fs.readFile(path, { offset: from, length: to - from });
  const body = total !== undefined && bytes.at(-1) === NL ? bytes.subarray(0, -1) : bytes;
  const lines = body.toString('utf8').split('\n');
  if (cutAt && lines.length > 1) lines.pop(); // a line cut by SPAN_BYTES: shown by the next view
  const { text, shown } = numbered(lines.slice(0, LIMITS.readLines), start);
  const lastAsked = total === undefined ? last : Math.min(last, total);
  if (start + shown - 1 < lastAsked)
    return `${text}\n${more(start, shown, end, `of ${path} (${stat.size} bytes)`)}`;
  return text;
};
