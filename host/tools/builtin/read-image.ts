// `read_image`: loads a png, jpeg, gif or webp file as an image content part. The type comes
// from the file's magic bytes, not its name, so a renamed file is still recognised (or refused).
// The bytes travel once, in the image part: the value (what code mode gets and the log keeps
// beside the content) says what was loaded, not the bytes again.

import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import { withContent } from '../content.ts';
import { defineTool } from '../define.ts';
import { LIMITS, sandboxOf } from './services.ts';
import { shownPath } from './text.ts';

export const imageMimeType = (data: Uint8Array): string | undefined => {
  const starts = (...bytes: number[]) => bytes.every((b, i) => data[i] === b);
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'image/png';
  if (starts(0xff, 0xd8, 0xff)) return 'image/jpeg';
  if (starts(0x47, 0x49, 0x46, 0x38)) return 'image/gif';
  if (
    starts(0x52, 0x49, 0x46, 0x46) &&
    data[8] === 0x57 &&
    data[9] === 0x45 &&
    data[10] === 0x42 &&
    data[11] === 0x50
  )
    return 'image/webp';
  return undefined;
};

export const readImageTool = defineTool({
  name: 'read_image',
  description: 'Load an image file (png, jpeg, gif or webp) from the sandbox so that you can see it.',
  parameters: v.object({
    file_path: v.pipe(
      v.string(),
      v.minLength(1),
      v.description('Path of the image, absolute or relative to the workspace'),
    ),
  }),
  output: {
    schema: v.object({ file_path: v.string(), mimeType: v.string(), size: v.number() }),
  },
  isConcurrencySafe: () => true,
  isReadOnly: () => true,
  async execute(args, exec) {
    const sandbox = await sandboxOf(exec);
    const shown = shownPath(args.file_path);
    const stat = await sandbox.fs.stat(args.file_path);
    if (stat.type !== 'file') throw new SandboxError('NOT_A_FILE', `${shown} is not a file.`);
    if (stat.size > LIMITS.imageBytes) {
      throw new SandboxError(
        'FILE_TOO_LARGE',
        `${shown} has ${stat.size} bytes; images up to ${LIMITS.imageBytes} bytes can be loaded. Scale it down first (e.g. with python3).`,
      );
    }
    const data = await sandbox.fs.readFile(args.file_path);
    const mimeType = imageMimeType(data);
    if (!mimeType) {
      throw new SandboxError(
        'INVALID_ARGUMENTS',
        `${shown} is not a png, jpeg, gif or webp image; use read for text files.`,
      );
    }
    return withContent({ file_path: stat.path, mimeType, size: data.length }, [
      { type: 'image', data: data.toString('base64'), mimeType },
    ]);
  },
});
