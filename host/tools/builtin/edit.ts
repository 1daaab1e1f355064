// `edit`: literal text replacement. old_string must match exactly once unless replace_all; no
// match and several matches are distinct, actionable errors. The file is written only on success.
// Bounds (the work runs on the control plane's event loop, see text.ts): files up to
// LIMITS.editBytes are edited (FILE_TOO_LARGE past it, checked by stat before reading), the result
// may not grow past it either (checked before it is built), counting and replacing yield to the
// loop as they go.

import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import { defineTool } from '../define.ts';
import { looksBinary } from './read.ts';
import { LIMITS, sandboxOf } from './services.ts';
import { findOccurrences, linesList, replaceOccurrences, shownPath, slicer } from './text.ts';

/** Refuses a file the editing tools do not load (a directory, or one past LIMITS.editBytes). */
export const checkEditable = (stat: { type: string; size: number; path: string }, shown: string): void => {
  if (stat.type === 'directory')
    throw new SandboxError('NOT_A_FILE', `${shown} is a directory; give the path of a file.`);
  if (stat.size > LIMITS.editBytes)
    throw new SandboxError(
      'FILE_TOO_LARGE',
      `${shown} has ${stat.size} bytes, more than the editing tools handle (${LIMITS.editBytes}); use bash (sed, python3) to change it.`,
      { data: { size: stat.size, maxBytes: LIMITS.editBytes } },
    );
};

export const editTool = defineTool({
  name: 'edit',
  annotations: { destructiveHint: true, openWorldHint: false },
  description:
    'Replace literal text in a file. old_string must appear exactly once (include surrounding lines to make it unique) unless replace_all is true.',
  parameters: v.object({
    file_path: v.pipe(
      v.string(),
      v.minLength(1),
      v.description('Path of the file, absolute or relative to the workspace'),
    ),
    old_string: v.pipe(v.string(), v.minLength(1), v.description('The exact text to replace')),
    new_string: v.pipe(v.string(), v.description('The text to put in its place')),
    replace_all: v.optional(v.pipe(v.boolean(), v.description('Replace every occurrence'))),
  }),
  output: {
    schema: v.object({ file_path: v.string(), replacements: v.number() }),
    render: (_args, value) => [
      {
        type: 'text',
        text: `Edited ${value.file_path}: ${value.replacements} replacement${value.replacements === 1 ? '' : 's'}`,
      },
    ],
  },
  writePaths: (args) => [args.file_path],
  async execute(args, exec) {
    if (args.old_string === args.new_string) {
      throw new SandboxError(
        'INVALID_ARGUMENTS',
        'old_string and new_string are the same; nothing to change.',
      );
    }
    const sandbox = await sandboxOf(exec);
    const shown = shownPath(args.file_path);
    const path = sandbox.fs.resolve(args.file_path);
    checkEditable(await sandbox.fs.stat(path), shown);
    const data = await sandbox.fs.readFile(path);
    if (looksBinary(data))
      throw new SandboxError('BINARY_FILE', `${shown} is a binary file; edit only changes text files.`);
    const text = data.toString('utf8');
    const slice = slicer(exec.signal);
    const found = await findOccurrences(text, args.old_string, slice);
    const count = found.count;
    if (count === 0) {
      throw new SandboxError(
        'INVALID_ARGUMENTS',
        `old_string was not found in ${shown}; read the file and copy the text exactly, including whitespace.`,
      );
    }
    if (count > 1 && !args.replace_all) {
      throw new SandboxError(
        'INVALID_ARGUMENTS',
        `old_string appears ${count} times in ${shown}, on ${linesList(found)}; add surrounding lines to make it unique, or set replace_all.`,
      );
    }
    const updated = await replaceOccurrences(
      text,
      args.old_string,
      args.new_string,
      count,
      LIMITS.editBytes,
      shown,
      slice,
    );
    await sandbox.fs.writeFile(path, updated);
    return { file_path: path, replacements: args.replace_all ? count : 1 };
  },
});
