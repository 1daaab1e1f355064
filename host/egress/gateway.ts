// The egress gateway: the one way anything of an agent reaches outside the control plane. Default
// deny. For every connection or request it: reads the destination once (./hosts.ts), checks the
// tenant's allowlist narrowed by the agent's (./rules.ts), resolves the name itself and refuses it
// when any address it resolves to is not public (./address.ts) unless the operator admitted that
// address as a test host, takes a lease on the tenant's budgets (./budget.ts), and pins the address
// it checked: the connection goes to that IP, never to a second resolution (no DNS rebinding
// between check and connect). Every decision is an audit event (./audit.ts).
// This module wires the parts, each in its own module: admission.ts checks, resolves, pins and
// leases (authorize), and knows which hosts a tenant gave a credential for; connection.ts opens the
// proxy's tunnels; gateway-state.ts holds the options and the shared state.
// Callers: `fetch` (./http.ts) for web_fetch, web_search and remote MCP servers; `connect` for the
// sandbox's proxy tunnel (an opaque TCP stream to an allowed host and port, whose bytes move only
// through its `join`: ./tunnel.ts).
// Invariants: nothing connects without a grant; a grant's lease is closed exactly once, when its
// connection ends; bytes are charged to it as they pass, never after; a grant carries a credential
// only for a TLS connection or one the credential's `allowInsecure` admits; refusals are
// EGRESS_DENIED with `data.reason`, budgets EGRESS_BUDGET_EXCEEDED.
import { lookup as dnsLookup } from 'node:dns/promises';
import { authorize, intercepts, redactor } from './admission.ts';
import { createAudit } from './audit.ts';
import { createBudgets } from './budget.ts';
import { connect } from './connection.ts';
import type { EgressGateway, EgressGatewayOptions, GatewayState, Lookup } from './gateway-state.ts';
import { canonicalHost } from './hosts.ts';
import { gatewayFetch } from './http.ts';
import type { EgressCaller, EgressTarget } from './types.ts';

export type {
  EgressConnection,
  EgressGateway,
  EgressGatewayOptions,
  Lookup,
  TestHost,
} from './gateway-state.ts';

const defaultLookup: Lookup = (host) => dnsLookup(host, { all: true, verbatim: true });

export function createEgressGateway(options: EgressGatewayOptions): EgressGateway {
  const s: GatewayState = {
    options,
    lookup: options.lookup ?? defaultLookup,
    budgets: options.budgets ?? createBudgets(options.now),
    audit: createAudit(options.events, options.onAuditError),
    testHosts: (options.testHosts ?? []).map((t) => ({ ...t, ip: canonicalHost(t.ip).host })),
  };
  const { audit, budgets } = s;
  const authorizeOf = (caller: EgressCaller, to: EgressTarget, url?: string) => authorize(s, caller, to, url);

  const gateway: EgressGateway = {
    authorize: authorizeOf,
    connect: (caller, to, signal) => connect(s, caller, to, signal),
    intercepts: (tenantId, host) => intercepts(s, tenantId, host),
    fetch: (caller, url, init) =>
      gatewayFetch(
        { authorize: authorizeOf, audit, ...(options.ca === undefined ? {} : { ca: options.ca }) },
        caller,
        url,
        init,
      ),
    redactor: (tenantId) => redactor(s, tenantId),
    audit,
    budgets,
  };
  return gateway;
}
