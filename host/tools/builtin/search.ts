// `glob` and `grep`: find files by pattern and search their content. Both read-only, so they
// may overlap with sibling calls. Results are capped, and the cap is said, never silent.

import * as v from 'valibot';
import { defineTool } from '../define.ts';
import { LIMITS, sandboxOf } from './services.ts';

export const globTool = defineTool({
  name: 'glob',
  description:
    'Find files whose paths match a glob pattern (`**` crosses directories, e.g. `src/**/*.ts`). Returns absolute paths, sorted.',
  parameters: v.object({
    pattern: v.pipe(v.string(), v.minLength(1), v.description('Glob pattern, e.g. **/*.ts')),
    path: v.optional(v.pipe(v.string(), v.description('Directory to search in (default: the workspace)'))),
  }),
  output: {
    schema: v.array(v.string()),
    render: (_args, value) => [
      {
        type: 'text',
        text:
          value.length === 0
            ? 'No files found'
            : value.length >= LIMITS.globResults
              ? `${value.join('\n')}\n[results cut at ${LIMITS.globResults}; use a narrower pattern or path]`
              : value.join('\n'),
      },
    ],
  },
  isConcurrencySafe: () => true,
  isReadOnly: () => true,
  async execute(args, exec) {
    const sandbox = await sandboxOf(exec);
    const { paths } = await sandbox.fs.glob(args.pattern, { cwd: args.path, limit: LIMITS.globResults });
    return paths;
  },
});

const Match = v.object({ path: v.string(), line: v.number(), text: v.string() });

export const grepTool = defineTool({
  name: 'grep',
  description:
    'Search file contents with a regular expression (ripgrep syntax). `include` filters file names with a glob such as *.ts. Returns path:line:text for each match.',
  parameters: v.object({
    pattern: v.pipe(v.string(), v.minLength(1), v.description('Regular expression to search for')),
    path: v.optional(
      v.pipe(v.string(), v.description('File or directory to search (default: the workspace)')),
    ),
    include: v.optional(v.pipe(v.string(), v.description('Glob that file names must match, e.g. *.ts'))),
  }),
  output: {
    schema: v.array(Match),
    render: (_args, value) => {
      if (value.length === 0) return [{ type: 'text', text: 'No matches found' }];
      const lines = value.map(
        (m) =>
          `${m.path}:${m.line}:${m.text.length > LIMITS.lineChars ? `${m.text.slice(0, LIMITS.lineChars)} [line cut]` : m.text}`,
      );
      if (value.length >= LIMITS.grepResults)
        lines.push(`[matches cut at ${LIMITS.grepResults}; narrow the pattern, path or include]`);
      return [{ type: 'text', text: lines.join('\n') }];
    },
  },
  isConcurrencySafe: () => true,
  isReadOnly: () => true,
  async execute(args, exec) {
    const sandbox = await sandboxOf(exec);
    const { matches } = await sandbox.fs.grep(args.pattern, {
      path: args.path,
      include: args.include,
      limit: LIMITS.grepResults,
    });
    return matches;
  },
});
