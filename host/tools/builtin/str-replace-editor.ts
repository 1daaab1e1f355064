// `str_replace_editor` (minimal preset): view, create, str_replace or insert, following the
// contract models know from Anthropic's text-editor tool and OpenHands' editor: the arguments each
// command needs are checked up front (seed 000's conditional-argument table); create never
// overwrites; str_replace refuses an empty old_str, an old_str equal to new_str, no match (naming
// the path) and several matches (naming their lines); str_replace and insert answer with a
// numbered snippet of the edited region; lines are counted as `read` counts them (a final newline
// ends the last line, it does not start another). Every refusal leaves the file unchanged.
// Bounds (the work runs on the control plane's event loop, see text.ts): one readWithStat per call
// (symlinks followed); files up to LIMITS.editBytes are loaded, larger ones only viewed, in
// pieces (editor-view.ts); view and snippets are capped (LIMITS.readLines, LIMITS.viewChars);
// insert splices bytes; edits may not grow the file past LIMITS.editBytes; every loop yields.

import * as v from 'valibot';
import { isSandboxError, SandboxError } from '../../errors.ts';
import type { FileRead, SandboxFs } from '../../sandbox/types.ts';
import { defineTool } from '../define.ts';
import { checkEditable } from './edit.ts';
import {
  binaryFile,
  numbered,
  SNIPPET_CONTEXT,
  viewDirectory,
  viewLarge,
  viewLoaded,
} from './editor-view.ts';
import { looksBinary } from './read.ts';
import { LIMITS, sandboxOf } from './services.ts';
import {
  countNewlines,
  findOccurrences,
  linesList,
  replaceOccurrences,
  type Slicer,
  scanLines,
  slicer,
} from './text.ts';

const REQUIRED: Record<string, string[]> = {
  view: ['path'],
  create: ['path', 'file_text'],
  str_replace: ['path', 'old_str', 'new_str'],
  insert: ['path', 'insert_line', 'new_str'],
};

/** Opens `path` (following symlinks): its stat, and its bytes when it is a file the editor loads. */
const open = async (fs: SandboxFs, path: string): Promise<FileRead> => {
  try {
    return await fs.readWithStat(path, { maxBytes: LIMITS.editBytes });
  } catch (error) {
    if (isSandboxError(error) && error.code === 'FILE_NOT_FOUND')
      throw new SandboxError(
        'FILE_NOT_FOUND',
        `The path ${path} does not exist. View its directory to find the right path, or make the file with create.`,
        { cause: error },
      );
    throw error;
  }
};

/** The bytes of a text file to edit; refuses a directory, a file too large, a binary file. */
const editable = ({ stat, data }: FileRead, command: string): Buffer => {
  if (stat.type === 'directory')
    throw new SandboxError(
      'NOT_A_FILE',
      `The path ${stat.path} is a directory; ${command} works on files (view lists a directory).`,
    );
  checkEditable(stat, stat.path);
  if (data === undefined || looksBinary(data)) throw binaryFile(stat.path);
  return data;
};

/** "The file … has been edited." with lines first…last of the new content, numbered. */
const edited = async (data: Buffer, path: string, first: number, last: number, slice: Slicer) => {
  const span = await scanLines(data, first, Math.min(last - first + 1, LIMITS.readLines), slice);
  const lines = data.subarray(span.start, span.end).toString('utf8').split('\n');
  const { text, shown } = numbered(span.lines === 0 ? [] : lines, first);
  const end = Math.min(last, span.total);
  const cut =
    first + shown - 1 < end
      ? `\n[snippet cut at line ${first + shown - 1}; view with view_range [${first + shown}, ${end}] to see the rest of the edit]`
      : '';
  return `The file ${path} has been edited. Here's the result of running \`cat -n\` on a snippet of ${path}:\n${text}${cut}\n`;
};

export const strReplaceEditorTool = defineTool({
  name: 'str_replace_editor',
  annotations: { destructiveHint: true, openWorldHint: false },
  description:
    'View, create and edit text files. view: path (+ view_range [start, end], 1-based, end -1 = to the end) shows numbered lines, or lists a directory two levels deep (hidden entries left out); create: path, file_text makes a new file (never overwrites one); str_replace: path, old_str (must match exactly once, whitespace included), new_str; insert: path, insert_line (0 = before the first line), new_str. Edits answer with a numbered snippet of the result.',
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
  writePaths: (args) => (args.command === 'view' ? [] : [args.path]),
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
    const path = fs.resolve(args.path);
    const slice = slicer(exec.signal);
    if (args.command === 'create') {
      // Not atomic with the write: a file made in between by a background job is replaced.
      if (await fs.exists(path))
        throw new SandboxError(
          'INVALID_ARGUMENTS',
          `File already exists at: ${path}. create does not overwrite files; view it, then change it with str_replace or insert.`,
        );
      await fs.writeFile(path, args.file_text!);
      return `File created successfully at: ${path}`;
    }
    const opened = await open(fs, path);
    if (args.command === 'view') {
      if (opened.stat.type === 'directory') return viewDirectory(fs, path, args.view_range);
      if (opened.data === undefined && opened.stat.size > LIMITS.editBytes)
        return viewLarge(fs, opened.stat, args.view_range, slice);
      const data = editable(opened, 'view');
      return viewLoaded(data, path, args.view_range, slice);
    }
    const data = editable(opened, args.command);
    if (args.command === 'str_replace') {
      const text = data.toString('utf8');
      const found = await findOccurrences(text, args.old_str!, slice);
      if (found.count === 0)
        throw new SandboxError(
          'INVALID_ARGUMENTS',
          `No replacement was performed: old_str did not appear verbatim in ${path}. View the file and copy the text exactly, including whitespace and indentation.`,
        );
      if (found.count > 1)
        throw new SandboxError(
          'INVALID_ARGUMENTS',
          `No replacement was performed: old_str occurs ${found.count} times in ${path}, on ${linesList(found)}. Include more surrounding lines to make it unique.`,
        );
      const updated = await replaceOccurrences(
        text,
        args.old_str!,
        args.new_str!,
        1,
        LIMITS.editBytes,
        path,
        slice,
      );
      const bytes = Buffer.from(updated, 'utf8');
      await fs.writeFile(path, bytes);
      const line = found.lines[0] as number;
      const added = await countNewlines(args.new_str!, slice);
      return `${await edited(bytes, path, Math.max(1, line - SNIPPET_CONTEXT), line + added + SNIPPET_CONTEXT, slice)}Review the changes and make sure they are as expected. Edit the file again if necessary.`;
    }
    // insert: the new lines go in before line insert_line + 1, spliced as bytes.
    const at = args.insert_line!;
    const span = await scanLines(data, at + 1, 1, slice);
    if (at > span.total)
      throw new SandboxError(
        'INVALID_ARGUMENTS',
        `insert_line ${at} is past the end of ${path}, which has ${span.total} lines; use a value from 0 to ${span.total}.`,
      );
    const inserted = Buffer.from(args.new_str!, 'utf8');
    if (data.length + inserted.length + 1 > LIMITS.editBytes)
      throw new SandboxError(
        'FILE_TOO_LARGE',
        `The insert would make ${path} larger than the ${LIMITS.editBytes} bytes the editing tools write; use bash to change it.`,
      );
    const nl = Buffer.from('\n');
    // After the last line: the file keeps its final newline, or its lack of one.
    const updated =
      at < span.total
        ? Buffer.concat([data.subarray(0, span.start), inserted, nl, data.subarray(span.start)])
        : data.length === 0
          ? Buffer.concat([inserted, nl])
          : data.at(-1) === 0x0a
            ? Buffer.concat([data, inserted, nl])
            : Buffer.concat([data, nl, inserted]);
    await fs.writeFile(path, updated);
    const added = (await countNewlines(args.new_str!, slice)) + 1;
    return `${await edited(updated, path, Math.max(1, at + 1 - SNIPPET_CONTEXT), at + added + SNIPPET_CONTEXT, slice)}Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary.`;
  },
});
