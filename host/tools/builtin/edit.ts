// `edit`: literal text replacement. old_string must match exactly once unless replace_all; no
// match and several matches are distinct, actionable errors. The file is written only on success.

import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import { defineTool } from '../define.ts';
import { looksBinary } from './read.ts';
import { sandboxOf } from './services.ts';

export const countOccurrences = (text: string, needle: string): number => {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) count++;
  return count;
};

export const editTool = defineTool({
  name: 'edit',
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
  async execute(args, exec) {
    if (args.old_string === args.new_string) {
      throw new SandboxError(
        'INVALID_ARGUMENTS',
        'old_string and new_string are the same; nothing to change.',
      );
    }
    const sandbox = await sandboxOf(exec);
    const path = sandbox.fs.resolve(args.file_path);
    const data = await sandbox.fs.readFile(path);
    if (looksBinary(data))
      throw new SandboxError(
        'BINARY_FILE',
        `${args.file_path} is a binary file; edit only changes text files.`,
      );
    const text = data.toString('utf8');
    const count = countOccurrences(text, args.old_string);
    if (count === 0) {
      throw new SandboxError(
        'INVALID_ARGUMENTS',
        `old_string was not found in ${args.file_path}; read the file and copy the text exactly, including whitespace.`,
      );
    }
    if (count > 1 && !args.replace_all) {
      throw new SandboxError(
        'INVALID_ARGUMENTS',
        `old_string appears ${count} times in ${args.file_path}; add surrounding lines to make it unique, or set replace_all.`,
      );
    }
    const updated = args.replace_all
      ? text.split(args.old_string).join(args.new_string)
      : text.replace(args.old_string, () => args.new_string);
    await sandbox.fs.writeFile(path, updated);
    return { file_path: path, replacements: args.replace_all ? count : 1 };
  },
});
