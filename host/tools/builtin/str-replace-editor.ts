// `str_replace_editor` (minimal preset): view, create, str_replace or insert, with the arguments
// each command needs checked up front (seed 000's conditional-argument table).

import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import { defineTool } from '../define.ts';
import { countOccurrences } from './edit.ts';
import { looksBinary } from './read.ts';
import { sandboxOf } from './services.ts';

const REQUIRED: Record<string, string[]> = {
  view: ['path'],
  create: ['path', 'file_text'],
  str_replace: ['path', 'old_str', 'new_str'],
  insert: ['path', 'insert_line', 'new_str'],
};

const numbered = (lines: string[], first: number): string =>
  lines.map((line, i) => `${String(first + i).padStart(6, ' ')}\t${line}`).join('\n');

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
  async execute(args, exec) {
    const missing = (REQUIRED[args.command] ?? []).filter(
      (key) => args[key as keyof typeof args] === undefined,
    );
    if (missing.length > 0) {
      throw new SandboxError('INVALID_ARGUMENTS', `${args.command} needs ${missing.join(', ')}.`);
    }
    const { fs } = await sandboxOf(exec);
    const path = fs.resolve(args.path);
    if (args.command === 'create') {
      await fs.writeFile(path, args.file_text!);
      return `Created ${path}`;
    }
    const stat = await fs.stat(path);
    if (args.command === 'view' && stat.type === 'directory') {
      const entries = await fs.list(path);
      return (
        entries.map((e) => `${e.name}${e.type === 'directory' ? '/' : ''}`).join('\n') || '(empty directory)'
      );
    }
    const data = await fs.readFile(path);
    if (looksBinary(data)) throw new SandboxError('BINARY_FILE', `${args.path} is a binary file.`);
    const text = data.toString('utf8');
    const lines = text.split('\n');
    if (args.command === 'view') {
      const [start = 1, end = -1] = args.view_range ?? [];
      const last = end === -1 ? lines.length : end;
      if (start < 1 || last < start || start > lines.length) {
        throw new SandboxError(
          'INVALID_ARGUMENTS',
          `view_range [${start}, ${end}] is outside the file's ${lines.length} lines.`,
        );
      }
      return numbered(lines.slice(start - 1, last), start);
    }
    if (args.command === 'str_replace') {
      const count = countOccurrences(text, args.old_str!);
      if (count !== 1) {
        throw new SandboxError(
          'INVALID_ARGUMENTS',
          count === 0
            ? `old_str was not found in ${args.path}; copy it exactly, including whitespace.`
            : `old_str appears ${count} times in ${args.path}; include more context to make it unique.`,
        );
      }
      await fs.writeFile(
        path,
        text.replace(args.old_str!, () => args.new_str!),
      );
      return `Replaced text in ${path}`;
    }
    const at = args.insert_line!;
    if (at > lines.length)
      throw new SandboxError(
        'INVALID_ARGUMENTS',
        `insert_line ${at} is past the file's ${lines.length} lines.`,
      );
    lines.splice(at, 0, ...args.new_str!.split('\n'));
    await fs.writeFile(path, lines.join('\n'));
    return `Inserted ${args.new_str!.split('\n').length} line(s) after line ${at} of ${path}`;
  },
});
