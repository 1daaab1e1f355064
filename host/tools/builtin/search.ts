// `glob` and `grep`: find files by pattern and search their content. Both read-only, so they
// may overlap with sibling calls. Results are capped, and a cut is said when something was cut
// (the sandbox reports it), never otherwise. What each searches is said in its description:
// glob lists every file, hidden and git-ignored ones too, sorted by path; grep skips hidden and
// ignored files (node_modules would flood every search) unless its path names them.

import * as v from 'valibot';
import { withContent } from '../content.ts';
import { defineTool } from '../define.ts';
import { LIMITS, sandboxOf } from './services.ts';

export const globTool = defineTool({
  name: 'glob',
  description:
    'Find files whose paths match a glob pattern (`**` crosses directories, e.g. `src/**/*.ts`). Returns absolute paths sorted by path (not by time), hidden and git-ignored files included.',
  parameters: v.object({
    pattern: v.pipe(v.string(), v.minLength(1), v.description('Glob pattern, e.g. **/*.ts')),
    path: v.optional(v.pipe(v.string(), v.description('Directory to search in (default: the workspace)'))),
  }),
  output: { schema: v.array(v.string()) },
  isConcurrencySafe: () => true,
  isReadOnly: () => true,
  async execute(args, exec) {
    const sandbox = await sandboxOf(exec);
    const { paths, truncated } = await sandbox.fs.glob(args.pattern, {
      cwd: args.path,
      limit: LIMITS.globResults,
    });
    const listed = paths.length === 0 ? 'No files found' : paths.join('\n');
    const text = truncated
      ? `${listed}\n[results cut at ${LIMITS.globResults}; use a narrower pattern or path]`
      : listed;
    return withContent(paths, [{ type: 'text', text }]);
  },
});

const Match = v.object({ path: v.string(), line: v.number(), text: v.string() });

export const grepTool = defineTool({
  name: 'grep',
  description:
    'Search file contents with a regular expression (ripgrep syntax, case-sensitive). `include` filters file names with a glob such as *.ts. Skips hidden files and directories and what .gitignore/.ignore files exclude (e.g. node_modules); to search one of them, give it as `path`. Returns path:line:text for each match, sorted by path.',
  parameters: v.object({
    pattern: v.pipe(v.string(), v.minLength(1), v.description('Regular expression to search for')),
    path: v.optional(
      v.pipe(v.string(), v.description('File or directory to search (default: the workspace)')),
    ),
    include: v.optional(v.pipe(v.string(), v.description('Glob that file names must match, e.g. *.ts'))),
  }),
  output: { schema: v.array(Match) },
  isConcurrencySafe: () => true,
  isReadOnly: () => true,
  async execute(args, exec) {
    const sandbox = await sandboxOf(exec);
    const { matches, truncated } = await sandbox.fs.grep(args.pattern, {
      path: args.path,
      include: args.include,
      skipIgnored: true,
      limit: LIMITS.grepResults,
    });
    if (matches.length === 0) return withContent(matches, [{ type: 'text', text: 'No matches found' }]);
    const lines = matches.map(
      (m) =>
        `${m.path}:${m.line}:${m.text.length > LIMITS.lineChars ? `${m.text.slice(0, LIMITS.lineChars)} [line cut]` : m.text}`,
    );
    if (truncated) lines.push(`[matches cut at ${LIMITS.grepResults}; narrow the pattern, path or include]`);
    return withContent(matches, [{ type: 'text', text: lines.join('\n') }]);
  },
});
