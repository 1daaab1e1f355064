// The egress gateway: the one way anything of an agent reaches outside the control plane. Default
// deny. For every connection or request it: reads the destination once (./hosts.ts), checks the
// tenant's allowlist narrowed by the agent's (./rules.ts), resolves the name itself and refuses it
// when any address it resolves to is not public (./address.ts) unless the operator admitted that
// address as a test host, takes a lease on the tenant's budgets (./budget.ts), and pins the address
// it checked: the connection goes to that IP, never to a second resolution (no DNS rebinding
// between check and connect). Every decision is an audit event (./audit.ts).
// Callers: `fetch` (./http.ts) for web_fetch, web_search and remote MCP servers; `connect` for the
// sandbox's proxy tunnel (an opaque TCP stream to an allowed host and port, whose bytes move only
// through its `join`: ./tunnel.ts).
// Invariants: nothing connects without a grant; a grant's lease is closed exactly once, when its
// connection ends; bytes are charged to it as they pass, never after; a grant carries a credential
// only for a TLS connection or one the credential's `allowInsecure` admits; refusals are
// EGRESS_DENIED with `data.reason`, budgets EGRESS_BUDGET_EXCEEDED.
import { lookup as dnsLookup } from 'node:dns/promises';
import { connect as netConnect } from 'node:net';
import type { Duplex } from 'node:stream';
import { SandboxError } from '../errors.ts';
import type { EventLog } from '../store/types.ts';
import { classifyAddress } from './address.ts';
import { type Audit, createAudit, type EgressRecord } from './audit.ts';
import { type Budgets, createBudgets, type EgressBudget } from './budget.ts';
import { canonicalHost, hostMatches } from './hosts.ts';
import { type GatewayFetchInit, gatewayFetch } from './http.ts';
import { decide, type EgressRule } from './rules.ts';
import { splice } from './tunnel.ts';
import type { EgressCaller, EgressCredential, EgressTarget, Grant, TenantEgress } from './types.ts';

/** An address the operator admits although it is not public (tests and development only). */
export interface TestHost {
  ip: string;
  /** Any port when absent. */
  port?: number;
}

export type Lookup = (host: string) => Promise<Array<{ address: string; family: number }>>;

export interface EgressGatewayOptions {
  /** The tenant's settings (allowlist, credentials, budget); undefined: nothing is admitted. */
  settingsOf: (tenantId: string) => TenantEgress | undefined;
  /** The agent's own rules, which narrow the tenant's; undefined: the tenant's alone. */
  agentRulesOf: (tenantId: string, agentId: string) => EgressRule[] | undefined;
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
  /** Replaces every credential value of the tenant in `text` with a placeholder naming it. */
  redact(tenantId: string, text: string): string;
  /**
   * Whether the tenant gave a credential for `host`: the sandbox's HTTPS to it is intercepted (the
   * gateway terminates TLS to add it: ./intercept/), all other hosts' is an opaque tunnel.
   */
  intercepts(tenantId: string, host: string): boolean;
  audit: Audit;
  budgets: Budgets;
}

const denied = (message: string, reason: string): SandboxError =>
  new SandboxError('EGRESS_DENIED', message, { data: { reason } });

const defaultLookup: Lookup = (host) => dnsLookup(host, { all: true, verbatim: true });

export function createEgressGateway(options: EgressGatewayOptions): EgressGateway {
  const lookup = options.lookup ?? defaultLookup;
  const budgets = options.budgets ?? createBudgets(options.now);
  const audit = createAudit(options.events, options.onAuditError);
  const testHosts = (options.testHosts ?? []).map((t) => ({ ...t, ip: canonicalHost(t.ip).host }));

  function admittedForTests(ip: string, port: number): boolean {
    return testHosts.some((t) => t.ip === ip && (t.port === undefined || t.port === port));
  }

  function budgetOf(settings: TenantEgress): EgressBudget {
    const max = options.maxBudget;
    return {
      connections: Math.min(settings.budget?.connections ?? max.connections, max.connections),
      bytesPerHour: Math.min(settings.budget?.bytesPerHour ?? max.bytesPerHour, max.bytesPerHour),
    };
  }

  /** The addresses `host` stands for, each checked; the first is pinned. */
  async function resolve(
    host: string,
    family: 0 | 4 | 6,
    port: number,
  ): Promise<{ ip: string; family: 4 | 6 }> {
    let addresses: Array<{ address: string; family: number }>;
    if (family !== 0) addresses = [{ address: host, family }];
    else {
      try {
        addresses = await lookup(host);
      } catch (error) {
        throw new SandboxError('EGRESS_FAILED', `${host} could not be resolved.`, {
          cause: error,
          data: { reason: 'dns' },
        });
      }
    }
    if (addresses.length === 0)
      throw new SandboxError('EGRESS_FAILED', `${host} has no address.`, { data: { reason: 'dns' } });
    // Every address must pass: a name that also resolves to an internal address is refused whole.
    for (const { address } of addresses) {
      const cls = classifyAddress(address);
      if (cls.kind === 'special' && !admittedForTests(canonicalHost(address).host, port))
        throw Object.assign(
          denied(
            `${host} resolves to ${address} (${cls.range}), which the gateway never connects to.`,
            `address ${cls.range}`,
          ),
          { ip: address },
        );
    }
    const first = addresses[0] as { address: string; family: number };
    return { ip: first.address, family: first.family === 6 ? 6 : 4 };
  }

  async function authorize(caller: EgressCaller, to: EgressTarget, url?: string): Promise<Grant> {
    const started = Date.now();
    const record: EgressRecord = {
      decision: 'deny',
      host: to.host,
      port: to.port,
      ...(to.method === undefined ? {} : { method: to.method }),
      ...(url === undefined ? {} : { url }),
    };
    try {
      const { host, ip: literal } = canonicalHost(to.host);
      record.host = host;
      if (!Number.isInteger(to.port) || to.port < 1 || to.port > 65535)
        throw denied(`Port ${to.port} is not a port.`, 'malformed port');
      const settings = options.settingsOf(caller.tenantId);
      if (settings === undefined || settings.allow.length === 0)
        throw denied(
          `Egress is denied: this tenant has no egress allowlist (PUT /v1/egress sets one).`,
          'no allowlist',
        );
      const agentRules =
        caller.agentRules === false ? undefined : options.agentRulesOf(caller.tenantId, caller.agentId);
      const decision = decide(settings.allow, agentRules, { ...to, host });
      if (decision.kind === 'deny')
        throw denied(`Egress to ${host}:${to.port} is denied: ${decision.reason}.`, decision.reason);
      // What the log could not record does not happen: the audit of an allowed egress is written
      // when it closes (and kept then whatever the budget), so it is allowed only while the log
      // still admits the agent's events.
      if (options.events.admits?.(caller.sessionId) === false)
        throw denied(
          `Egress to ${host}:${to.port} is denied: this tenant's event log is full, so it could not be recorded (an operator can raise DSH_TENANT_LOG_BYTES).`,
          'event log full',
        );
      const pinned = await resolve(host, literal, to.port);
      const lease = budgets.open(caller.tenantId, budgetOf(settings));
      // A secret goes only where nobody on the path reads it, unless its credential says otherwise.
      const credentials: EgressCredential[] = [];
      const withheld: string[] = [];
      for (const c of settings.credentials) {
        if (!hostMatches(c.host, host)) continue;
        if (to.tls === true || c.allowInsecure === true) credentials.push(c);
        else withheld.push(c.name);
      }
      return { host, port: to.port, ip: pinned.ip, family: pinned.family, lease, credentials, withheld };
    } catch (error) {
      const reason =
        error instanceof SandboxError ? String(error.data?.reason ?? error.code) : 'internal error';
      const ip = (error as { ip?: unknown }).ip;
      audit(caller, {
        ...record,
        reason,
        ...(typeof ip === 'string' ? { ip } : {}),
        durationMs: Date.now() - started,
      });
      throw error;
    }
  }

  async function connect(
    caller: EgressCaller,
    to: EgressTarget,
    signal?: AbortSignal,
  ): Promise<EgressConnection> {
    const grant = await authorize(caller, { host: to.host, port: to.port });
    const started = Date.now();
    const socket = netConnect({
      host: grant.ip,
      port: grant.port,
      family: grant.family,
      ...(signal ? { signal } : {}),
    });
    let error: string | undefined;
    const closed = new Promise<void>((resolve) => {
      socket.once('close', () => {
        grant.lease.close();
        audit(caller, {
          decision: 'allow',
          host: grant.host,
          port: grant.port,
          ip: grant.ip,
          bytesIn: socket.bytesRead,
          bytesOut: socket.bytesWritten,
          durationMs: Date.now() - started,
          ...(error === undefined ? {} : { error }),
        });
        resolve();
      });
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('error', (e) => {
        error ??= e.message;
        reject(
          new SandboxError(
            'EGRESS_FAILED',
            `Could not connect to ${grant.host}:${grant.port}: ${e.message}`,
            {
              cause: e,
            },
          ),
        );
      });
    });
    socket.on('error', (e) => {
      error ??= e.message;
    });
    return {
      ip: grant.ip,
      closed,
      join(client, options = {}) {
        splice(client, socket, grant.lease, {
          ...options,
          idleMs: options.idleMs ?? 0,
          onCut: () => {
            error ??= 'egress budget used up';
          },
        });
      },
      destroy: () => socket.destroy(),
    };
  }

  function redact(tenantId: string, text: string): string {
    let out = text;
    for (const c of options.settingsOf(tenantId)?.credentials ?? []) {
      if (c.value.length >= 4) out = out.split(c.value).join(`[credential ${c.name}]`);
    }
    return out;
  }

  function intercepts(tenantId: string, host: string): boolean {
    let canonical: string;
    try {
      canonical = canonicalHost(host).host;
    } catch {
      return false;
    }
    return (options.settingsOf(tenantId)?.credentials ?? []).some((c) => hostMatches(c.host, canonical));
  }

  const gateway: EgressGateway = {
    authorize,
    connect,
    intercepts,
    fetch: (caller, url, init) =>
      gatewayFetch(
        { authorize, audit, ...(options.ca === undefined ? {} : { ca: options.ca }) },
        caller,
        url,
        init,
      ),
    redact,
    audit,
    budgets,
  };
  return gateway;
}
