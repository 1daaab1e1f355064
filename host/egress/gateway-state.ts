// The egress gateway's public shape, its options, and the state its parts share (gateway.ts wires
// them): the name resolution, the tenants' budgets, the audit, the operator's test hosts.
// Invariants: test hosts are held canonical (as canonicalHost reads them), so an address compares
// equal whatever its spelling.
import type { Duplex } from 'node:stream';
import type { EventLog } from '../store/types.ts';
import type { Audit } from './audit.ts';
import type { Budgets, EgressBudget } from './budget.ts';
import type { GatewayFetchInit } from './http.ts';
import type { EgressRule } from './rules.ts';
import type { EgressCaller, EgressTarget, Grant, TenantEgress } from './types.ts';

/** An address the operator admits although it is not public (tests and development only). */
export interface TestHost {
  ip: string;
  /** Any port when absent. */
  port?: number;
}

export type Lookup = (host: string) => Promise<Array<{ address: string; family: number }>>;

export interface EgressGatewayOptions {
  /**
   * The tenant's settings (allowlist, credentials, budget); undefined: nothing is admitted. Read
   * once per decision (a connection, a request, a redaction), never per byte.
   */
  settingsOf: (tenantId: string) => Promise<TenantEgress | undefined>;
  /** The agent's own rules, which narrow the tenant's; undefined: the tenant's alone. */
  agentRulesOf: (tenantId: string, agentId: string) => Promise<EgressRule[] | undefined>;
  /** Where the audit events go (the agent's session). */
  events: Pick<EventLog, 'append' | 'admits'>;
  /** The operator's maxima of every tenant's budget. */
  maxBudget: EgressBudget;
  /** Non-public addresses admitted anyway (DSH_EGRESS_ALLOW_HOSTS_FOR_TESTS). Default none. */
  testHosts?: readonly TestHost[];
  /** Name resolution. Default dns.lookup (all addresses). */
  lookup?: Lookup;
  /** Extra CA certificates trusted for HTTPS upstreams (tests). Default: Node's. */
  ca?: string | Buffer;
  budgets?: Budgets;
  now?: () => number;
  onAuditError?: (error: unknown) => void;
}

/**
 * An open tunnel to the upstream. Its bytes move only through `join`, which charges them to the
 * tenant's budget as they pass (./tunnel.ts): nothing reaches the upstream uncharged.
 */
export interface EgressConnection {
  ip: string;
  /**
   * Carries bytes both ways between `client` and the upstream until either ends, `head` first;
   * at the tenant's budget both are cut. Once per connection.
   */
  join(client: Duplex, options?: { head?: Buffer; idleMs?: number }): void;
  /** Closes the connection unjoined (the client left meanwhile). */
  destroy(): void;
  /** Settles when it closed and was audited. */
  closed: Promise<void>;
}

export interface EgressGateway {
  /** Checks, resolves, pins and leases; EGRESS_DENIED (audited) or EGRESS_BUDGET_EXCEEDED. */
  authorize(caller: EgressCaller, to: EgressTarget, url?: string): Promise<Grant>;
  /**
   * An opaque TCP connection to an allowed host and port, for the sandbox's proxy (CONNECT). The
   * bytes both ways count against the tenant's budget as they pass; at it the tunnel is cut.
   */
  connect(caller: EgressCaller, to: EgressTarget, signal?: AbortSignal): Promise<EgressConnection>;
  /**
   * An HTTP(S) request through the gateway, redirects re-checked hop by hop (./http.ts). The
   * response body streams; the audit event is written when it ends.
   */
  fetch(caller: EgressCaller, url: string | URL, init?: GatewayFetchInit): Promise<Response>;
  /**
   * What replaces every credential value of the tenant in a text with a placeholder naming it:
   * the settings read once, then applied to as many texts as the caller has.
   */
  redactor(tenantId: string): Promise<(text: string) => string>;
  /**
   * Whether the tenant gave a credential for `host`: the sandbox's HTTPS to it is intercepted (the
   * gateway terminates TLS to add it: ./intercept/), all other hosts' is an opaque tunnel.
   */
  intercepts(tenantId: string, host: string): Promise<boolean>;
  audit: Audit;
  budgets: Budgets;
}

/** One gateway's state, shared by its parts. */
export interface GatewayState {
  options: EgressGatewayOptions;
  lookup: Lookup;
  budgets: Budgets;
  audit: Audit;
  testHosts: TestHost[];
}
