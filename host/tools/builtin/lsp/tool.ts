// `lsp` (seed 000): goToDefinition, findReferences, goToImplementation or hover at a position of a
// file in the workspace, answered by the language server of its language (languages.ts), which runs
// in the agent's container and is started at the first query (session.ts). Lines and characters
// are 1-based, as `read` and grep number them; results are workspace-relative `path:line:col` with
// the line's text. One server per language per sandbox, stopped after its idle time.
// Bounds: the file asked about at most MAX_FILE_BYTES; at most MAX_LOCATIONS locations shown and
// snippets read from at most MAX_SNIPPET_FILES files; hover text cut at MAX_HOVER_CHARS.
import * as v from 'valibot';
import { relativeTo, WORKSPACE_ROOT } from '../../../../sandbox-wire/paths.ts';
import { SandboxError } from '../../../errors.ts';
import type { Sandbox } from '../../../sandbox/types.ts';
import { defineTool } from '../../define.ts';
import { toWhole } from '../../whole-number.ts';
import { looksBinary } from '../read.ts';
import { sandboxOf } from '../services.ts';
import { KNOWN_EXTENSIONS, languageOf } from './languages.ts';
import { type LspServers, sessionFor } from './servers.ts';
import { DEFAULT_LSP_LIMITS, type LspLimits } from './session.ts';

const MAX_FILE_BYTES = 4 * 1024 * 1024;
const MAX_LOCATIONS = 100;
const MAX_SNIPPET_FILES = 20;
const MAX_SNIPPET_CHARS = 200;
const MAX_HOVER_CHARS = 8000;

const OPERATIONS = {
  goToDefinition: 'textDocument/definition',
  findReferences: 'textDocument/references',
  goToImplementation: 'textDocument/implementation',
  hover: 'textDocument/hover',
} as const;
type Operation = keyof typeof OPERATIONS;

interface Place {
  path: string;
  line: number;
  character: number;
  snippet?: string;
}

/** An agent sandbox's language servers: one per language, started on demand, stopped when idle. */
export function lspTool(limits: LspLimits = DEFAULT_LSP_LIMITS) {
  const servers: LspServers = { bySandbox: new WeakMap(), limits };

  return defineTool({
    name: 'lsp',
    description: `Query the language server of a file's language: goToDefinition, findReferences, goToImplementation or hover at a position. TypeScript/JavaScript (${KNOWN_EXTENSIONS.filter((e) => e !== '.py' && e !== '.pyi').join(' ')}) and Python (.py .pyi). \`line\` and \`character\` are 1-based (line 1 is the first line, character 1 the first column), as read and grep number them. Results are workspace-relative path:line:col with the line's text. The first query of a language starts its server, which may take several seconds.`,
    parameters: v.object({
      operation: v.pipe(
        v.picklist(Object.keys(OPERATIONS) as Operation[]),
        v.description('What to ask the language server'),
      ),
      file_path: v.pipe(
        v.string(),
        v.minLength(1),
        v.description('Path of the file, absolute or relative to the workspace'),
      ),
      line: v.pipe(v.number(), toWhole, v.minValue(1), v.description('1-based line of the position')),
      character: v.pipe(
        v.number(),
        toWhole,
        v.minValue(1),
        v.description('1-based column of the position within the line'),
      ),
    }),
    isConcurrencySafe: () => true,
    isReadOnly: () => true,
    async execute(args, exec) {
      // Refused by its extension before any byte of it is read.
      const kind = languageOf(args.file_path);
      if (kind === undefined)
        throw new SandboxError(
          'INVALID_ARGUMENTS',
          `lsp answers for ${KNOWN_EXTENSIONS.join(' ')} files; ${args.file_path} is none of them.`,
        );
      const sandbox = await sandboxOf(exec);
      // The sandbox confines the path (PATH_OUTSIDE_WORKSPACE) and says what it is.
      const { stat, data } = await sandbox.fs.readWithStat(args.file_path, { maxBytes: MAX_FILE_BYTES });
      if (data === undefined)
        throw new SandboxError(
          stat.type === 'directory' ? 'NOT_A_FILE' : 'FILE_TOO_LARGE',
          stat.type === 'directory'
            ? `${args.file_path} is a directory.`
            : `${args.file_path} has ${stat.size} bytes; lsp reads files up to ${MAX_FILE_BYTES}.`,
        );
      if (looksBinary(data)) throw new SandboxError('BINARY_FILE', `${args.file_path} is a binary file.`);
      const text = data.toString('utf8');
      const lines = text.split('\n');
      if (args.line > lines.length)
        throw new SandboxError(
          'INVALID_ARGUMENTS',
          `line ${args.line} is past the end of ${args.file_path}, which has ${lines.length} lines.`,
        );
      const session = await sessionFor(servers, sandbox, kind.language, exec.signal);
      const raw = await session.query(
        OPERATIONS[args.operation],
        `file://${stat.path}`,
        kind.languageId,
        text,
        {
          position: { line: args.line - 1, character: args.character - 1 },
          ...(args.operation === 'findReferences' ? { context: { includeDeclaration: true } } : {}),
        },
        exec.signal,
      );
      if (args.operation === 'hover') {
        const hover = hoverText(raw);
        return { operation: args.operation, hover };
      }
      const places = locations(raw);
      await addSnippets(sandbox, places);
      return { operation: args.operation, locations: places, total: places.length };
    },
    output: {
      schema: Output,
      render(args, value) {
        const { operation } = args;
        const at = `${args.file_path}:${args.line}:${args.character}`;
        if ('hover' in value) {
          const { hover } = value;
          return [{ type: 'text', text: hover === '' ? `No hover information at ${at}.` : hover }];
        }
        const places = value.locations;
        if (places.length === 0) return [{ type: 'text', text: `${operation}: nothing found at ${at}.` }];
        const shown = places
          .slice(0, MAX_LOCATIONS)
          .map((p) =>
            p.snippet === undefined
              ? `${p.path}:${p.line}:${p.character}`
              : `${p.path}:${p.line}:${p.character}: ${p.snippet}`,
          );
        if (places.length > MAX_LOCATIONS) shown.push(`[${places.length - MAX_LOCATIONS} more not shown]`);
        return [{ type: 'text', text: shown.join('\n') }];
      },
    },
  });
}

const Output = v.union([
  v.object({ operation: v.string(), hover: v.string() }),
  v.object({
    operation: v.string(),
    total: v.number(),
    locations: v.array(
      v.object({
        path: v.string(),
        line: v.number(),
        character: v.number(),
        snippet: v.optional(v.string()),
      }),
    ),
  }),
]);

const Position = v.object({ line: v.number(), character: v.number() });
const Range = v.object({ start: Position, end: Position });
const Location = v.object({ uri: v.string(), range: Range });
const LocationLink = v.object({ targetUri: v.string(), targetSelectionRange: Range });

/** Locations of a definition/references/implementation answer, whatever of the LSP shapes it has. */
function locations(raw: unknown): Place[] {
  const list = Array.isArray(raw) ? raw : raw === null || raw === undefined ? [] : [raw];
  const places: Place[] = [];
  for (const item of list.slice(0, 10 * MAX_LOCATIONS)) {
    const link = v.safeParse(LocationLink, item);
    const location = v.safeParse(Location, item);
    const [uri, range] = link.success
      ? [link.output.targetUri, link.output.targetSelectionRange]
      : location.success
        ? [location.output.uri, location.output.range]
        : [undefined, undefined];
    if (uri === undefined || range === undefined || !uri.startsWith('file://')) continue;
    const abs = decodeURIComponent(uri.slice('file://'.length));
    const inside = abs === WORKSPACE_ROOT || abs.startsWith(`${WORKSPACE_ROOT}/`);
    places.push({
      path: inside ? relativeTo(WORKSPACE_ROOT, abs) : abs,
      line: range.start.line + 1,
      character: range.start.character + 1,
    });
  }
  return places;
}

/** The line of each location inside the workspace (from at most MAX_SNIPPET_FILES files). */
async function addSnippets(sandbox: Sandbox, places: Place[]): Promise<void> {
  const files = new Map<string, string[] | undefined>();
  for (const place of places.slice(0, MAX_LOCATIONS)) {
    if (place.path.startsWith('/')) continue;
    if (!files.has(place.path)) {
      if (files.size >= MAX_SNIPPET_FILES) continue;
      const read = await sandbox.fs
        .readWithStat(place.path, { maxBytes: MAX_FILE_BYTES })
        .catch(() => undefined);
      files.set(place.path, read?.data === undefined ? undefined : read.data.toString('utf8').split('\n'));
    }
    const line = files.get(place.path)?.[place.line - 1];
    if (line !== undefined) place.snippet = line.trim().slice(0, MAX_SNIPPET_CHARS);
  }
}

/** The text of a hover answer (MarkupContent, MarkedString or a list of them). */
function hoverText(raw: unknown): string {
  const contents = (raw as { contents?: unknown } | null)?.contents;
  const parts = Array.isArray(contents) ? contents : contents === undefined ? [] : [contents];
  const text = parts
    .map((part) =>
      typeof part === 'string'
        ? part
        : typeof (part as { value?: unknown })?.value === 'string'
          ? (part as { value: string }).value
          : '',
    )
    .filter((s) => s !== '')
    .join('\n\n');
  return text.length > MAX_HOVER_CHARS ? `${text.slice(0, MAX_HOVER_CHARS)}\n[hover cut]` : text;
}
