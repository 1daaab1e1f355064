// `read`: a bounded range of a text file with line numbers (seed 000). Long lines are cut, binary
// files refused with a clear error. The canonical value is the selected text itself, so code
// mode gets the file's content; the model sees it numbered.
// Bounds (the work runs on the control plane's event loop, see text.ts): files up to
// LIMITS.readBytes (FILE_TOO_LARGE past it, from the stat that comes with the read: one sandbox
// round trip, and no byte of a larger file crosses); the lines are found by one scan of the bytes
// that yields to the loop as it goes, and only the selected range (at most LIMITS.readLines lines)
// is decoded and split.

import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import { defineTool } from '../define.ts';
import { toWhole } from '../whole-number.ts';
import { LIMITS, sandboxOf } from './services.ts';
import { scanLines, shownPath, slicer } from './text.ts';

/** A NUL byte in the first 8 KiB marks a binary file, as git and ripgrep decide it. */
export const looksBinary = (data: Uint8Array): boolean => data.subarray(0, 8192).includes(0);

const Output = v.object({
  file_path: v.string(),
  content: v.string(),
  startLine: v.number(),
  lineCount: v.number(),
  totalLines: v.number(),
});

export const readTool = defineTool({
  name: 'read',
  description: `Read a text file from the sandbox with line numbers. Reads up to ${LIMITS.readLines} lines from \`offset\` (1-based line, default 1); lines over ${LIMITS.lineChars} characters are cut. Use read_image for images.`,
  parameters: v.object({
    file_path: v.pipe(
      v.string(),
      v.minLength(1),
      v.description('Path of the file, absolute or relative to the workspace'),
    ),
    offset: v.optional(
      v.pipe(v.number(), toWhole, v.minValue(1), v.description('First line to read, 1-based')),
    ),
    limit: v.optional(
      v.pipe(
        v.number(),
        toWhole,
        v.minValue(1),
        v.maxValue(LIMITS.readLines),
        v.description('How many lines to read'),
      ),
    ),
  }),
  output: {
    schema: Output,
    render: (_args, value) => {
      if (value.totalLines === 0) return [{ type: 'text', text: `(${value.file_path} is empty)` }];
      const lines = value.content.split('\n');
      const width = String(value.startLine + lines.length - 1).length;
      const numbered = lines.map((line, i) => {
        const cut = line.length > LIMITS.lineChars ? `${line.slice(0, LIMITS.lineChars)} [line cut]` : line;
        return `${String(value.startLine + i).padStart(width, ' ')}\t${cut}`;
      });
      const end = value.startLine + value.lineCount - 1;
      if (end < value.totalLines) {
        numbered.push(
          `[showing lines ${value.startLine}-${end} of ${value.totalLines}; use offset ${end + 1} to read on]`,
        );
      }
      return [{ type: 'text', text: numbered.join('\n') }];
    },
  },
  isConcurrencySafe: () => true,
  isReadOnly: () => true,
  async execute(args, exec) {
    const sandbox = await sandboxOf(exec);
    const shown = shownPath(args.file_path);
    const { stat, data } = await sandbox.fs.readWithStat(args.file_path, { maxBytes: LIMITS.readBytes });
    if (stat.type === 'directory') {
      throw new SandboxError('NOT_A_FILE', `${shown} is a directory; use glob or bash ls to list it.`);
    }
    if (data === undefined) {
      throw new SandboxError(
        'FILE_TOO_LARGE',
        `${shown} has ${stat.size} bytes, more than read handles (${LIMITS.readBytes}); use bash (head, sed -n, rg) to look into it.`,
      );
    }
    if (looksBinary(data)) {
      throw new SandboxError(
        'BINARY_FILE',
        `${shown} is a binary file; use read_image for images or bash (file, xxd) to inspect it.`,
      );
    }
    const start = args.offset ?? 1;
    const span = await scanLines(data, start, args.limit ?? LIMITS.readLines, slicer(exec.signal));
    if (span.total > 0 && start > span.total) {
      throw new SandboxError(
        'INVALID_ARGUMENTS',
        `offset ${start} is past the end of ${shown}, which has ${span.total} lines.`,
      );
    }
    return {
      file_path: stat.path,
      content: data.subarray(span.start, span.end).toString('utf8'),
      startLine: start,
      lineCount: span.lines,
      totalLines: span.total,
    };
  },
});
