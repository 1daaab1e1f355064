// What web_fetch and web_search do, behind the tools' port (host/tools/builtin/web.ts):
// - fetchPage: the URL through the gateway (the agent's allowlist, redirects re-checked, the
//   tenant's credentials added), within a size cap and a deadline; HTML becomes readable markdown in
//   the readable worker; other text is returned as text; binary content is refused. Every credential
//   value of the tenant is replaced by a placeholder in what the model gets, should the upstream echo it.
// - search: the tenant's provider (reached through the gateway, its host in the tenant's allowlist),
//   else the operator's (DSH_SEARCH_SEARXNG_URL, reached directly: the operator's own service).
import { SandboxError } from '../errors.ts';
import type { WebPage, WebResults } from '../tools/builtin/web.ts';
import { readCapped } from './body.ts';
import type { EgressGateway } from './gateway.ts';
import type { ReadablePool } from './readable/pool.ts';
import { searxngProvider } from './search/searxng.ts';
import type { ProviderFetch, SearchProvider } from './search/types.ts';
import type { EgressSettings } from './settings.ts';
import type { EgressCaller } from './types.ts';

/** What web_fetch returns (the tool's contract, host/tools/builtin/web.ts). */
export type FetchedPage = WebPage;

export interface WebAccess {
  fetchPage(caller: EgressCaller, url: string, signal: AbortSignal): Promise<FetchedPage>;
  /** Whether the tenant's agents have a search provider (web_search is offered only then). */
  searchAvailable(tenantId: string): Promise<boolean>;
  search(caller: EgressCaller, queries: string[], signal: AbortSignal): Promise<WebResults[]>;
  /** The deadline of one fetch or search (WebLimits.timeoutMs). */
  readonly timeoutMs: number;
}

export interface WebLimits {
  /** Largest response read. Default 5 MiB. */
  maxBytes: number;
  /** Deadline of one fetch, redirects included. Default 30000 ms. */
  timeoutMs: number;
  /** Longest content handed to the model, in characters. Default 100000. */
  maxChars: number;
}

export interface WebAccessOptions {
  gateway: EgressGateway;
  settings: Pick<EgressSettings, 'get' | 'hasSearch'>;
  readable: ReadablePool;
  /** The operator's SearXNG instance, used by tenants without their own. */
  searxngUrl?: string;
  limits?: Partial<WebLimits>;
}

const TEXTUAL =
  /^(text\/|application\/(json|xml|xhtml\+xml|javascript|ld\+json|rss\+xml|atom\+xml|x-ndjson|yaml|toml))/;

/** The charset a content type names, when TextDecoder knows it; utf-8 otherwise. */
function decoderFor(contentType: string): { decode(input: Uint8Array): string } {
  const charset = /charset="?([\w-]+)/i.exec(contentType)?.[1];
  try {
    return new TextDecoder(charset ?? 'utf-8');
  } catch {
    return new TextDecoder('utf-8');
  }
}

export function createWebAccess(options: WebAccessOptions): WebAccess {
  const limits: WebLimits = {
    maxBytes: 5 * 1024 * 1024,
    timeoutMs: 30_000,
    maxChars: 100_000,
    ...options.limits,
  };
  const { gateway } = options;

  async function fetchPage(caller: EgressCaller, url: string, signal: AbortSignal): Promise<FetchedPage> {
    const deadline = AbortSignal.any([signal, AbortSignal.timeout(limits.timeoutMs)]);
    try {
      const response = await gateway.fetch(caller, url, {
        signal: deadline,
        maxBytes: limits.maxBytes,
        headers: {
          accept: 'text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5',
          'user-agent': 'dsh-sandbox web_fetch',
        },
      });
      const contentType = response.headers.get('content-type') ?? 'application/octet-stream';
      const finalUrl = response.url || url;
      if (!TEXTUAL.test(contentType.toLowerCase())) {
        await response.body?.cancel();
        throw new SandboxError(
          'BINARY_FILE',
          `${url} is ${contentType.split(';')[0]}, not text; web_fetch reads HTML and text only.`,
        );
      }
      const body = await readCapped(response, limits.maxBytes);
      const text = decoderFor(contentType).decode(body);
      const html = /html/i.test(contentType);
      const readable: { title?: string; markdown: string } = html
        ? await options.readable.convert(text, finalUrl, signal)
        : { markdown: text };
      const redact = await gateway.redactor(caller.tenantId);
      const redacted = redact(readable.markdown);
      const truncated = redacted.length > limits.maxChars;
      const title = readable.title === undefined ? undefined : redact(readable.title);
      return {
        url: finalUrl,
        status: response.status,
        contentType: contentType.split(';')[0] ?? contentType,
        ...(title === undefined ? {} : { title }),
        content: truncated ? redacted.slice(0, limits.maxChars) : redacted,
        truncated,
      };
    } catch (error) {
      if (deadline.aborted && !signal.aborted)
        throw new SandboxError('TOOL_TIMEOUT', `Fetching ${url} took longer than ${limits.timeoutMs} ms.`);
      throw error;
    }
  }

  async function providerOf(caller: EgressCaller): Promise<SearchProvider | undefined> {
    const own = (await options.settings.get(caller.tenantId))?.search;
    if (own !== undefined) {
      // The tenant's provider is the service's use, not the agent's: the tenant's rules alone.
      const viaGateway: ProviderFetch = (url, signal) =>
        gateway.fetch({ ...caller, via: 'web_search', agentRules: false }, url, {
          signal,
          maxBytes: 2 * 1024 * 1024,
        });
      return searxngProvider({ url: own.url, fetch: viaGateway });
    }
    if (options.searxngUrl === undefined) return undefined;
    const direct: ProviderFetch = (url, signal) => fetch(url, { signal, redirect: 'error' });
    return searxngProvider({ url: options.searxngUrl, fetch: direct });
  }

  return {
    fetchPage,
    timeoutMs: limits.timeoutMs,
    searchAvailable: async (tenantId) =>
      options.searxngUrl !== undefined || (await options.settings.hasSearch(tenantId)),
    async search(caller, queries, signal) {
      const provider = await providerOf(caller);
      if (provider === undefined)
        throw new SandboxError('TOOL_FAILED', 'No web search provider is configured for this tenant.');
      const deadline = AbortSignal.any([signal, AbortSignal.timeout(limits.timeoutMs)]);
      const answers = await Promise.all(
        queries.map(async (query) => ({ query, results: await provider.search(query, deadline) })),
      );
      const redact = await gateway.redactor(caller.tenantId);
      return answers.map((a) => ({
        query: a.query,
        results: a.results.map((hit) => ({
          title: redact(hit.title),
          url: hit.url,
          snippet: redact(hit.snippet),
        })),
      }));
    },
  };
}
