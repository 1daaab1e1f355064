// `write`: creates or replaces a file (parents created). Exclusive: it mutates the workspace.

import * as v from 'valibot';
import { defineTool } from '../define.ts';
import { sandboxOf } from './services.ts';

export const writeTool = defineTool({
  name: 'write',
  // Replaces a file in the agent's own workspace: the same call twice leaves the same file.
  annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: false },
  description:
    'Create a file or replace its whole content. Parent directories are created. Prefer edit for changing part of an existing file.',
  parameters: v.object({
    file_path: v.pipe(
      v.string(),
      v.minLength(1),
      v.description('Path of the file, absolute or relative to the workspace'),
    ),
    content: v.pipe(v.string(), v.description('The complete new content')),
  }),
  output: {
    schema: v.object({ file_path: v.string(), bytes: v.number(), created: v.boolean() }),
    render: (_args, value) => [
      {
        type: 'text',
        text: `${value.created ? 'Created' : 'Replaced'} ${value.file_path} (${value.bytes} bytes)`,
      },
    ],
  },
  writePaths: (args) => [args.file_path],
  async execute(args, exec) {
    const sandbox = await sandboxOf(exec);
    const path = sandbox.fs.resolve(args.file_path);
    const existed = await sandbox.fs.exists(path);
    await sandbox.fs.writeFile(path, args.content);
    return { file_path: path, bytes: Buffer.byteLength(args.content), created: !existed };
  },
});
