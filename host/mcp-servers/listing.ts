// A server's tool listing (tools/list, page by page), read within the tenant's bounds: at most
// maxListPages pages, maxListedTools tools and maxListBytes of their JSON, before the start's
// deadline. A listing a bound cuts short keeps the tools read before it and says why (`incomplete`);
// the rest of that page is counted as skipped, unread, and no further page is asked for.
// Each listed tool is checked on its own (the SDK's listTools() refuses a whole page for one
// malformed tool, so one bad tool would hide a server's good ones), in slices that yield to the
// event loop between them: a page of 20,000 tools costs the control plane many short turns, never
// one long one, so every other tenant's requests keep being answered meanwhile.
// What the agent does not get is reported as a count plus the first MAX_SKIP_NOTES with the reason,
// never one note per tool: a server listing 300,000 tools makes a note of 20.
// Everything here comes from the server: hostile, bounded, never trusted.
import { setImmediate as nextTurn } from 'node:timers/promises';
import * as v from 'valibot';
import type { JsonSchema } from '../tools/types.ts';
import type { McpLimits, McpSkipped, McpToolInfo } from './types.ts';

/** Skipped tools reported by name and reason; the rest only counted. */
export const MAX_SKIP_NOTES = 20;
/** Tools checked, and bytes of them measured, between two yields to the event loop. */
const SLICE_TOOLS = 256;
const SLICE_BYTES = 256 * 1024;
const MAX_DESCRIPTION = 8192;

const ListedTool = v.looseObject({
  name: v.pipe(v.string(), v.minLength(1)),
  title: v.optional(v.string()),
  description: v.optional(v.string()),
  inputSchema: v.looseObject({ type: v.literal('object') }),
});

/** One page of tools/list as the server answered it (the page itself already checked for shape). */
export interface ToolsPage {
  tools: unknown[];
  nextCursor?: string | undefined;
}

/** Asks the server for the page at `cursor`: its answer, or 'timeout' when none came within `timeoutMs`. */
export type PageReader = (cursor: string | undefined, timeoutMs: number) => Promise<ToolsPage | 'timeout'>;

export interface McpListing {
  /** The valid tools, at most maxToolsPerServer. */
  tools: McpToolInfo[];
  skipped: McpSkipped;
  /** Why the listing stopped before the server's last page, when a bound stopped it. */
  incomplete?: string;
}

export const noSkips = (): McpSkipped => ({ count: 0, first: [] });

/** Counts a skipped tool, and keeps its note while there are fewer than MAX_SKIP_NOTES. */
export function noteSkip(skipped: McpSkipped, tool: string, reason: string): void {
  skipped.count++;
  if (skipped.first.length < MAX_SKIP_NOTES) skipped.first.push({ tool, reason });
}

/** A listed tool's name for a skip note, whatever the server sent. */
const listedName = (tool: unknown, index: number): string => {
  const name = (tool as { name?: unknown } | null)?.name;
  return typeof name === 'string' && name !== '' ? name.slice(0, 200) : `#${index}`;
};

/** A bound that ends the listing: why (for `incomplete`) and the note of the tools it left unread. */
interface Stop {
  why: string;
  unread: string;
}

/**
 * Reads the server's listing page by page until its last page or a bound. `deadline` (epoch ms) is
 * the start's: a first page that does not come by then fails the start (this throws); a later one
 * ends the listing with what was read. The reader's other failures are thrown as they are.
 */
export async function readListing(
  readPage: PageReader,
  limits: McpLimits,
  deadline: number,
): Promise<McpListing> {
  const tools: McpToolInfo[] = [];
  const skipped = noSkips();
  let listed = 0;
  let bytes = 0;
  let cursor: string | undefined;
  const outOfTime = (): Stop => ({
    why: `listing its tools took longer than ${limits.startTimeoutMs} ms`,
    unread: 'not read: the listing ran out of time',
  });

  for (let pages = 0; ; pages++) {
    if (pages >= limits.maxListPages)
      return {
        tools,
        skipped,
        incomplete: `the server announced more than ${limits.maxListPages} pages of tools`,
      };
    const page = await readPage(cursor, Math.max(1, deadline - Date.now()));
    if (page === 'timeout') {
      if (pages === 0) throw new Error(`it did not list its tools within ${limits.startTimeoutMs} ms`);
      return { tools, skipped, incomplete: outOfTime().why };
    }
    let sliceTools = 0;
    let sliceBytes = 0;
    let stop: Stop | undefined;
    for (const [index, entry] of page.tools.entries()) {
      if (stop === undefined) {
        if (sliceTools >= SLICE_TOOLS || sliceBytes >= SLICE_BYTES) {
          await nextTurn();
          sliceTools = 0;
          sliceBytes = 0;
          if (Date.now() > deadline) stop = outOfTime();
        }
        if (stop === undefined && listed >= limits.maxListedTools)
          stop = {
            why: `the server listed more than ${limits.maxListedTools} tools`,
            unread: `not read: over the ${limits.maxListedTools} tools a listing may hold`,
          };
      }
      if (stop !== undefined) {
        // Counted, not checked: what a bound left unread costs nothing more.
        noteSkip(skipped, listedName(entry, index), stop.unread);
        continue;
      }
      const size = JSON.stringify(entry)?.length ?? 0;
      bytes += size;
      sliceBytes += size;
      sliceTools++;
      listed++;
      if (bytes > limits.maxListBytes) {
        stop = {
          why: `the server's tools came to more than ${limits.maxListBytes} bytes`,
          unread: `not read: over the ${limits.maxListBytes} bytes a listing may hold`,
        };
        noteSkip(skipped, listedName(entry, index), stop.unread);
        continue;
      }
      take(entry, index);
    }
    if (stop !== undefined) return { tools, skipped, incomplete: stop.why };
    cursor = page.nextCursor;
    if (cursor === undefined) return { tools, skipped };
  }

  function take(entry: unknown, index: number): void {
    const tool = v.safeParse(ListedTool, entry);
    if (!tool.success) {
      const issue = tool.issues[0];
      const where = issue === undefined ? '' : ` (${v.getDotPath(issue) ?? 'the tool'}: ${issue.message})`;
      noteSkip(skipped, listedName(entry, index), `not a valid MCP tool${where}`.slice(0, 500));
      return;
    }
    if (tools.length >= limits.maxToolsPerServer) {
      noteSkip(skipped, listedName(entry, index), `over ${limits.maxToolsPerServer} tools`);
      return;
    }
    const { name, title, description, inputSchema } = tool.output;
    tools.push({
      name,
      description: (description ?? title ?? name).slice(0, MAX_DESCRIPTION),
      inputSchema: inputSchema as JsonSchema,
    });
  }
}
