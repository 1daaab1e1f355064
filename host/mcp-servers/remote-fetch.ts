// The fetch a remote MCP server's transport uses: every request through the egress gateway, as the
// agent (audited in its log, `via: mcp`) under the tenant's allowlist alone: the tenant registered
// the server, so the agent's own narrowing (which governs where its tools reach) does not apply.
// Redirects are the SDK's to follow (same origin only), each through here again, so re-checked.
// A POST's answer is one request's (possibly as an SSE stream) and is capped; the GET stream of
// server notifications lives as long as the session: its transport meters it (remote-transport.ts).
import type { FetchLike } from '@modelcontextprotocol/client';
import type { EgressCaller, EgressGateway } from '../egress/index.ts';

export function remoteFetchFor(gateway: EgressGateway, caller: EgressCaller, maxBytes: number): FetchLike {
  return function remoteFetch(url, init = {}) {
    const method = (init.method ?? 'GET').toUpperCase();
    const body = init.body;
    return gateway.fetch({ ...caller, via: 'mcp', agentRules: false }, url, {
      method,
      headers: new Headers(init.headers),
      body: body === undefined || body === null ? null : typeof body === 'string' ? body : String(body),
      signal: init.signal ?? null,
      maxRedirects: 0,
      idleTimeoutMs: 0,
      ...(method === 'POST' ? { maxBytes } : {}),
    });
  };
}
