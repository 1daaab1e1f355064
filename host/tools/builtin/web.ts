// `web_fetch(url)` and `web_search(queries)` (seed 000): the model-facing contracts, over a port
// that the egress side implements (host/egress/web.ts: the gateway, the readable worker, the search
// providers). Which agents see them is decided where they are registered (host/agents/web.ts):
// web_fetch only for agents created with `fetch: true`, web_search only where a provider is set.
// Both change nothing, so they may overlap and run in plan mode.
import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import { backstopTimeout, defineTool } from '../define.ts';
import type { ExecContext, ToolDefinition } from '../types.ts';

/** Who is fetching: the tenant (its allowlist), the agent (its narrowing, its log) and the call. */
export interface WebCaller {
  tenantId: string;
  agentId: string;
  sessionId: string;
  callId: string;
}

export interface WebPage {
  url: string;
  status: number;
  contentType: string;
  title?: string;
  content: string;
  truncated: boolean;
}

export interface WebResults {
  query: string;
  results: Array<{ title: string; url: string; snippet: string }>;
}

export interface WebPort {
  fetchPage(caller: WebCaller, url: string, signal: AbortSignal): Promise<WebPage>;
  search(caller: WebCaller, queries: string[], signal: AbortSignal): Promise<WebResults[]>;
  /** The deadline of one fetch or search; the tools declare a backstop past it. Default 30000. */
  readonly timeoutMs?: number;
}

/** The timeout policy ends a fetch or search whose own deadline never fires (a stuck reader). */
const webTimeout = (web: WebPort): number => backstopTimeout(web.timeoutMs ?? 30_000);

export const MAX_QUERIES = 5;

function callerOf(exec: ExecContext): WebCaller {
  const tenantId = exec.agent.services.tenantId;
  if (typeof tenantId !== 'string')
    throw new SandboxError('TOOL_FAILED', 'This agent belongs to no tenant, so it has no egress.');
  return { tenantId, agentId: exec.agent.id, sessionId: exec.agent.sessionId, callId: exec.callId };
}

const Page = v.object({
  url: v.string(),
  status: v.number(),
  contentType: v.string(),
  title: v.optional(v.string()),
  content: v.string(),
  truncated: v.boolean(),
});

export const webFetchTool = (web: WebPort): ToolDefinition =>
  defineTool({
    name: 'web_fetch',
    description:
      'Fetch a web page by its http(s) URL and return its main content as markdown (plain text, JSON and other ' +
      "text as they are). Only hosts this agent's egress allowlist admits are reached, redirects included; " +
      'binary files are refused and long pages are cut.',
    parameters: v.object({
      url: v.pipe(
        v.string(),
        v.minLength(1),
        v.maxLength(8192),
        v.description('The http or https URL to fetch'),
      ),
    }),
    output: {
      schema: Page,
      render: (_args, page) => [
        {
          type: 'text',
          text: [
            ...(page.title === undefined ? [] : [`# ${page.title}`]),
            `URL: ${page.url} (HTTP ${page.status}, ${page.contentType})`,
            '',
            page.content,
            ...(page.truncated ? ['', '[content cut: the page is longer]'] : []),
          ].join('\n'),
        },
      ],
    },
    timeoutMs: webTimeout(web),
    execute: (args, exec) => web.fetchPage(callerOf(exec), args.url, exec.signal),
    isConcurrencySafe: () => true,
    isReadOnly: () => true,
    annotations: { openWorldHint: true },
  });

export const webSearchTool = (web: WebPort): ToolDefinition =>
  defineTool({
    name: 'web_search',
    description:
      'Search the web through the configured provider. Give one or more queries (at most ' +
      `${MAX_QUERIES}); each returns its top results with title, URL and snippet.`,
    parameters: v.object({
      queries: v.pipe(
        v.array(v.pipe(v.string(), v.minLength(1), v.maxLength(500))),
        v.minLength(1),
        v.maxLength(MAX_QUERIES),
        v.description('Search queries, run independently'),
      ),
    }),
    output: {
      schema: v.object({
        results: v.array(
          v.object({
            query: v.string(),
            results: v.array(v.object({ title: v.string(), url: v.string(), snippet: v.string() })),
          }),
        ),
      }),
      render: (_args, value) => [
        {
          type: 'text',
          text: value.results
            .map(
              (q) =>
                `## ${q.query}\n` +
                (q.results.length === 0
                  ? '(no results)'
                  : q.results
                      .map((r, i) => `${i + 1}. [${r.title || r.url}](${r.url})\n   ${r.snippet}`)
                      .join('\n')),
            )
            .join('\n\n'),
        },
      ],
    },
    timeoutMs: webTimeout(web),
    execute: async (args, exec) => ({ results: await web.search(callerOf(exec), args.queries, exec.signal) }),
    isConcurrencySafe: () => true,
    isReadOnly: () => true,
    annotations: { openWorldHint: true },
  });
