// SearXNG's JSON API as a search provider: `GET <base>/search?q=<query>&format=json` answers
// `{ results: [{ url, title, content }] }` (the instance must list `json` in its search formats).
// The answer is hostile input: read with a size cap, fields checked, strings bounded.
import { SandboxError } from '../../errors.ts';
import { readCapped } from '../body.ts';
import type { ProviderFetch, SearchHit, SearchProvider } from './types.ts';

export interface SearxngOptions {
  /** The instance's base URL (the path of its `/search` is resolved against it). */
  url: string;
  fetch: ProviderFetch;
  /** Hits kept per query. Default 10. */
  maxResults?: number;
  /** Largest answer read. Default 2 MiB. */
  maxBytes?: number;
}

const text = (value: unknown, max: number): string => (typeof value === 'string' ? value.slice(0, max) : '');

export function searxngProvider(options: SearxngOptions): SearchProvider {
  const base = options.url.endsWith('/') ? options.url : `${options.url}/`;
  return {
    async search(query, signal) {
      const url = new URL('search', base);
      url.searchParams.set('q', query);
      url.searchParams.set('format', 'json');
      const response = await options.fetch(url.href, signal);
      const body = await readCapped(response, options.maxBytes ?? 2 * 1024 * 1024);
      if (!response.ok)
        throw new SandboxError('EGRESS_FAILED', `The search provider answered HTTP ${response.status}.`, {
          data: { reason: 'provider' },
        });
      let parsed: unknown;
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch (error) {
        throw new SandboxError(
          'EGRESS_FAILED',
          'The search provider did not answer JSON (does the SearXNG instance enable the json format?).',
          { cause: error, data: { reason: 'provider' } },
        );
      }
      const results = (parsed as { results?: unknown }).results;
      if (!Array.isArray(results)) return [];
      const hits: SearchHit[] = [];
      for (const r of results) {
        if (hits.length >= (options.maxResults ?? 10)) break;
        const url = text((r as { url?: unknown })?.url, 2048);
        if (!/^https?:\/\//.test(url)) continue;
        hits.push({
          title: text((r as { title?: unknown }).title, 500),
          url,
          snippet: text((r as { content?: unknown }).content, 1000),
        });
      }
      return hits;
    },
  };
}
