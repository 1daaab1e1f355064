// The web search port: one query in, ranked hits out. One implementation per file beside this one
// (./searxng.ts); web_search (../web.ts) runs a call's queries through the tenant's provider.

export interface SearchHit {
  title: string;
  url: string;
  snippet: string;
}

export interface SearchProvider {
  search(query: string, signal: AbortSignal): Promise<SearchHit[]>;
}

/** How a provider reaches its service: the gateway's fetch (a tenant's) or a direct one (the operator's). */
export type ProviderFetch = (url: string, signal: AbortSignal) => Promise<Response>;
