// The egress vocabulary: what a tenant sets (its allowlist, the credentials the gateway adds for
// named hosts, its budgets and its search provider), who is reaching out (EgressCaller) and what the
// gateway decided. Types only.
import type { BudgetLease, EgressBudget } from './budget.ts';
import type { EgressRule } from './rules.ts';

export type { EgressBudget, EgressRule };

/**
 * A secret the gateway adds to requests for hosts matching `host` (an allowlist pattern), as the
 * header `header`, over https only unless `allowInsecure`. Stored by the service; the API, the
 * model and the sandbox only ever see its name.
 */
export interface EgressCredential {
  name: string;
  host: string;
  header: string;
  value: string;
  /**
   * Also add it to plain `http://` requests, where anyone on the path reads it. Default false: a
   * plain-HTTP request to its host goes without it.
   */
  allowInsecure?: boolean;
}

/** A web search provider the tenant's agents' `web_search` uses. */
export interface SearchSettings {
  /** SearXNG's JSON API (`GET <url>/search?q=…&format=json`). */
  provider: 'searxng';
  /** The instance's base URL; reached through the gateway, so the allowlist must admit it. */
  url: string;
}

/** One tenant's egress settings as stored (secrets included: never returned as they are). */
export interface TenantEgress {
  allow: EgressRule[];
  credentials: EgressCredential[];
  /** Lower than the operator's maxima, never higher. */
  budget?: Partial<EgressBudget>;
  search?: SearchSettings;
}

/** Who reaches out, for the decision, the budget and the audit event in the agent's log. */
export interface EgressCaller {
  tenantId: string;
  agentId: string;
  /** The agent's session: where the audit events go. */
  sessionId: string;
  /** The path the bytes take: a tool, an MCP server, or the sandbox's proxy tunnel. */
  via: 'web_fetch' | 'web_search' | 'mcp' | 'proxy';
  /** The tool call this egress serves, when there is one. */
  callId?: string;
  /**
   * Whether the agent's own rules narrow this egress. Default true; false only for a destination the
   * tenant itself configured for the service's use (its search provider).
   */
  agentRules?: boolean;
}

/** A checked destination: the pinned address, the budget lease, and the credentials for it. */
export interface Grant {
  host: string;
  port: number;
  /** The one address this connection may go to. */
  ip: string;
  family: 4 | 6;
  lease: BudgetLease;
  /**
   * Headers to add: the tenant's credentials for this host that may travel on this connection (all
   * of them over TLS, only those with `allowInsecure` without).
   */
  credentials: EgressCredential[];
  /** The names of the host's credentials kept back because the connection is not TLS (for the audit). */
  withheld: string[];
}

export interface EgressTarget {
  host: string;
  port: number;
  /** The HTTP method when the gateway sees the request; absent for an opaque tunnel. */
  method?: string;
  /**
   * Whether the gateway itself speaks TLS to the upstream (an https:// request). Credentials are
   * granted only then, or for a credential that says `allowInsecure`. Default false.
   */
  tls?: boolean;
}
