// `str_replace_editor` (minimal preset): view, create, str_replace or insert, with the arguments
// each command needs checked up front (seed 000's conditional-argument table), and the errors an
// OpenHands-style editor gives: an empty old_str, an old_str equal to new_str, no match and several
// matches are each refused with a clear INVALID_ARGUMENTS and leave the file unchanged.
// Bounds (the work runs on the control plane's event loop, see text.ts): files up to
// LIMITS.editBytes are loaded (FILE_TOO_LARGE past it); view shows at most LIMITS.readLines lines,
// each cut at LIMITS.lineChars, and at most LIMITS.viewEntries directory entries, saying what it
// left out; view and insert never decode or split the whole file (insert splices bytes); edits may
// not grow the file past LIMITS.editBytes; every loop yields to the event loop as it goes.

import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import { defineTool } from '../define.ts';
import { checkEditable } from './edit.ts';
import { looksBinary } from './read.ts';
import { LIMITS, sandboxOf } from './services.ts';
import { countNewlines, countOccurrences, replaceOccurrences, scanLines, shownPath, slicer } from './text.ts';

const REQUIRED: Record<string, string[]> = {
  view: ['path'],
  create: ['path', 'file_text'],
  str_replace: ['path', 'old_str', 'new_str'],
  insert: ['path', 'insert_line', 'new_str'],
};

const cut = (line: string): string =>
  line.length > LIMITS.lineChars ? `${line.slice(0, LIMITS.lineChars)} [line cut]` : line;

const numbered = (lines: string[], first: number): string =>
  lines.map((line, i) => `${String(first + i).padStart(6, ' ')}\t${cut(line)}`).join('\n');

export const strReplaceEditorTool = defineTool({
  name: 'str_replace_editor',
  description:
    'View, create, replace or insert file content. view: path (+ view_range [start,end]); create: path, file_text; str_replace: path, old_str (must match exactly once), new_str; insert: path, insert_line (0 = top), new_str.',
  parameters: v.object({
    command: v.pipe(v.picklist(['view', 'create', 'str_replace', 'insert']), v.description('What to do')),
    path: v.pipe(v.string(), v.minLength(1), v.description('File or directory path')),
    file_text: v.optional(v.pipe(v.string(), v.description('create: the file content'))),
    insert_line: v.optional(
      v.pipe(v.number(), v.integer(), v.minValue(0), v.description('insert: insert after this line')),
    ),
    new_str: v.optional(v.pipe(v.string(), v.description('str_replace / insert: the new text'))),
    old_str: v.optional(v.pipe(v.string(), v.description('str_replace: the exact text to replace'))),
    view_range: v.optional(
      v.pipe(
        v.array(v.pipe(v.number(), v.integer())),
        v.length(2),
        v.description('view: [start, end] lines, 1-based; end -1 = to the end'),
      ),
    ),
  }),
  output: { schema: v.string() },
  // Only `view` leaves the workspace as it was (plan mode lets it through).
  isReadOnly: (args) => args.command === 'view',
  async execute(args, exec) {
    const missing = (REQUIRED[args.command] ?? []).filter(
      (key) => args[key as keyof typeof args] === undefined,
    );
    if (missing.length > 0) {
      throw new SandboxError('INVALID_ARGUMENTS', `${args.command} needs ${missing.join(', ')}.`);
    }
    if (args.command === 'str_replace') {
      if (args.old_str === '')
        throw new SandboxError(
          'INVALID_ARGUMENTS',
          'old_str is empty; give the exact text to replace, with enough surrounding lines to match exactly once. To add text, use insert; to write a whole file, use create.',
        );
      if (args.old_str === args.new_str)
        throw new SandboxError(
          'INVALID_ARGUMENTS',
          'old_str and new_str are the same; no replacement was performed.',
        );
    }
    const { fs } = await sandboxOf(exec);
    const shown = shownPath(args.path);
    const path = fs.resolve(args.path);
    if (args.command === 'create') {
      await fs.writeFile(path, args.file_text!);
      return `Created ${path}`;
    }
    const stat = await fs.stat(path);
    if (args.command === 'view' && stat.type === 'directory') {
      const entries = await fs.list(path);
      const listed = entries
        .slice(0, LIMITS.viewEntries)
        .map((e) => `${e.name}${e.type === 'directory' ? '/' : ''}`);
      if (entries.length > LIMITS.viewEntries)
        listed.push(`[${entries.length - LIMITS.viewEntries} more entries not shown; use bash ls or find]`);
      return listed.join('\n') || '(empty directory)';
    }
    checkEditable(stat, shown);
    const data = await fs.readFile(path);
    if (looksBinary(data)) throw new SandboxError('BINARY_FILE', `${shown} is a binary file.`);
    const slice = slicer(exec.signal);
    if (args.command === 'view') {
      const [start = 1, end = -1] = args.view_range ?? [];
      const asked = end === -1 ? Number.POSITIVE_INFINITY : end - start + 1;
      const span = await scanLines(data, start, Math.min(asked, LIMITS.readLines), 'starts-line', slice);
      const last = end === -1 ? span.total : end;
      if (start < 1 || last < start || start > span.total) {
        throw new SandboxError(
          'INVALID_ARGUMENTS',
          `view_range [${start}, ${end}] is outside the file's ${span.total} lines.`,
        );
      }
      const lines = data.subarray(span.start, span.end).toString('utf8').split('\n');
      const text = numbered(lines, start);
      const shownEnd = start + span.lines - 1;
      return shownEnd < Math.min(last, span.total)
        ? `${text}\n[showing lines ${start}-${shownEnd} of ${span.total}; view with view_range [${shownEnd + 1}, ${end}] to see more]`
        : text;
    }
    if (args.command === 'str_replace') {
      const text = data.toString('utf8');
      const count = await countOccurrences(text, args.old_str!, slice);
      if (count !== 1) {
        throw new SandboxError(
          'INVALID_ARGUMENTS',
          count === 0
            ? `old_str was not found in ${shown}; copy it exactly, including whitespace.`
            : `old_str appears ${count} times in ${shown}; include more context to make it unique.`,
        );
      }
      const updated = await replaceOccurrences(
        text,
        args.old_str!,
        args.new_str!,
        1,
        LIMITS.editBytes,
        shown,
        slice,
      );
      await fs.writeFile(path, updated);
      return `Replaced text in ${path}`;
    }
    // insert: splice the new lines in before line insert_line + 1, as bytes.
    const at = args.insert_line!;
    const span = await scanLines(data, at + 1, 1, 'starts-line', slice);
    if (at > span.total)
      throw new SandboxError(
        'INVALID_ARGUMENTS',
        `insert_line ${at} is past the file's ${span.total} lines.`,
      );
    const inserted = Buffer.from(args.new_str!, 'utf8');
    if (data.length + inserted.length + 1 > LIMITS.editBytes)
      throw new SandboxError(
        'FILE_TOO_LARGE',
        `The insert would make ${shown} larger than the ${LIMITS.editBytes} bytes the editing tools write; use bash to change it.`,
      );
    const nl = Buffer.from('\n');
    const updated =
      at === span.total
        ? Buffer.concat([data, nl, inserted])
        : Buffer.concat([data.subarray(0, span.start), inserted, nl, data.subarray(span.start)]);
    await fs.writeFile(path, updated);
    const count = (await countNewlines(args.new_str!, slice)) + 1;
    return `Inserted ${count} line(s) after line ${at} of ${path}`;
  },
});
