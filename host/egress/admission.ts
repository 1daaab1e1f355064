// What a tenant's settings admit, decided for every connection or request before it is made: the
// destination read once (./hosts.ts), the tenant's allowlist narrowed by the agent's (./rules.ts),
// the name resolved here and refused when any address it resolves to is not public (./address.ts)
// unless the operator admitted that address as a test host, a lease taken on the tenant's budgets
// (./budget.ts), and the address it checked pinned. Also which hosts the tenant gave a credential
// for (intercepts) and the redaction of its credential values.
// Invariants: nothing is granted without an allowlist entry, a public (or admitted) address for
// every resolution, and a lease; a refusal is EGRESS_DENIED with `data.reason` and is audited; a
// grant carries a credential only for a TLS connection or one the credential's `allowInsecure`
// admits; an allowed egress is admitted only while the event log still admits the agent's events;
// each decision (a connection, a request, an intercept, a redactor) reads the tenant's settings
// once, awaited, and nothing reads them per byte.
import { SandboxError } from '../errors.ts';
import { classifyAddress } from './address.ts';
import type { EgressRecord } from './audit.ts';
import type { EgressBudget } from './budget.ts';
import type { GatewayState } from './gateway-state.ts';
import { canonicalHost, hostMatches } from './hosts.ts';
import { decide } from './rules.ts';
import type { EgressCaller, EgressCredential, EgressTarget, Grant, TenantEgress } from './types.ts';

const denied = (message: string, reason: string): SandboxError =>
  new SandboxError('EGRESS_DENIED', message, { data: { reason } });

function admittedForTests(s: GatewayState, ip: string, port: number): boolean {
  return s.testHosts.some((t) => t.ip === ip && (t.port === undefined || t.port === port));
}

function budgetOf(s: GatewayState, settings: TenantEgress): EgressBudget {
  const max = s.options.maxBudget;
  return {
    connections: Math.min(settings.budget?.connections ?? max.connections, max.connections),
    bytesPerHour: Math.min(settings.budget?.bytesPerHour ?? max.bytesPerHour, max.bytesPerHour),
  };
}

/** The addresses `host` stands for, each checked; the first is pinned. */
async function resolve(
  s: GatewayState,
  host: string,
  family: 0 | 4 | 6,
  port: number,
): Promise<{ ip: string; family: 4 | 6 }> {
  let addresses: Array<{ address: string; family: number }>;
  if (family !== 0) addresses = [{ address: host, family }];
  else {
    try {
      addresses = await s.lookup(host);
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
    if (cls.kind === 'special' && !admittedForTests(s, canonicalHost(address).host, port))
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

export async function authorize(
  s: GatewayState,
  caller: EgressCaller,
  to: EgressTarget,
  url?: string,
): Promise<Grant> {
  const { options, budgets, audit } = s;
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
    const settings = await options.settingsOf(caller.tenantId);
    if (settings === undefined || settings.allow.length === 0)
      throw denied(
        `Egress is denied: this tenant has no egress allowlist (PUT /v1/egress sets one).`,
        'no allowlist',
      );
    const agentRules =
      caller.agentRules === false ? undefined : await options.agentRulesOf(caller.tenantId, caller.agentId);
    const decision = decide(settings.allow, agentRules, { ...to, host });
    if (decision.kind === 'deny')
      throw denied(`Egress to ${host}:${to.port} is denied: ${decision.reason}.`, decision.reason);
    // What the log could not record does not happen: the audit of an allowed egress is written
    // when it closes (and kept then whatever the budget), so it is allowed only while the log
    // still admits the agent's events.
    if ((await options.events.admits?.(caller.sessionId)) === false)
      throw denied(
        `Egress to ${host}:${to.port} is denied: this tenant's event log is full, so it could not be recorded (an operator can raise this tenant's logBytes quota, or DSH_TENANT_LOG_BYTES for every tenant).`,
        'event log full',
      );
    const pinned = await resolve(s, host, literal, to.port);
    const lease = await budgets.open(caller.tenantId, budgetOf(s, settings));
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

export async function redactor(s: GatewayState, tenantId: string): Promise<(text: string) => string> {
  const credentials = ((await s.options.settingsOf(tenantId))?.credentials ?? []).filter(
    (c) => c.value.length >= 4,
  );
  return function redact(text: string): string {
    let out = text;
    for (const c of credentials) out = out.split(c.value).join(`[credential ${c.name}]`);
    return out;
  };
}

export async function intercepts(s: GatewayState, tenantId: string, host: string): Promise<boolean> {
  let canonical: string;
  try {
    canonical = canonicalHost(host).host;
  } catch {
    return false;
  }
  const credentials = (await s.options.settingsOf(tenantId))?.credentials ?? [];
  return credentials.some((c) => hostMatches(c.host, canonical));
}
