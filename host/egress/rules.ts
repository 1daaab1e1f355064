// The allowlist: what a tenant admits (its rules) and how an agent narrows it (its own rules, which
// can only take away: a destination must match a rule of both). Default deny: no rule, no egress.
// A rule admits a host pattern (./hosts.ts) on some ports (default 80 and 443) with some methods
// (default any). Methods are checked only where the gateway sees the request (web_fetch, MCP,
// plain HTTP); a rule that names methods never admits an opaque tunnel, whose method it cannot see.
import { canonicalPattern, hostMatches } from './hosts.ts';

export interface EgressRule {
  /** `example.com`, `*.example.com`, an IP address, or `*` (any public host). */
  host: string;
  /** Ports admitted. Default [80, 443]. */
  ports?: number[];
  /** HTTP methods admitted (upper case). Default: any. */
  methods?: string[];
}

export const DEFAULT_PORTS: readonly number[] = [80, 443];

/** What one connection or request wants to reach; `method` is absent for an opaque tunnel. */
export interface Destination {
  host: string;
  port: number;
  method?: string;
}

/** `allow`: a rule admits it; `deny`: none does, with the reason a person reads. */
export type RuleDecision = { kind: 'allow'; rule: EgressRule } | { kind: 'deny'; reason: string };

/** Rules in their stored form: canonical patterns, methods upper case. BAD_REQUEST when one is invalid. */
export function canonicalRules(rules: readonly EgressRule[]): EgressRule[] {
  return rules.map((rule) => ({
    host: canonicalPattern(rule.host),
    ...(rule.ports === undefined ? {} : { ports: [...new Set(rule.ports)].sort((a, b) => a - b) }),
    ...(rule.methods === undefined
      ? {}
      : { methods: [...new Set(rule.methods.map((m) => m.toUpperCase()))] }),
  }));
}

function admits(rule: EgressRule, to: Destination): boolean {
  if (!hostMatches(rule.host, to.host)) return false;
  if (!(rule.ports ?? DEFAULT_PORTS).includes(to.port)) return false;
  if (rule.methods === undefined) return true;
  return to.method !== undefined && rule.methods.includes(to.method.toUpperCase());
}

/** The first of `rules` that admits `to`. */
export function matchRules(rules: readonly EgressRule[], to: Destination, whose: string): RuleDecision {
  const rule = rules.find((r) => admits(r, to));
  if (rule !== undefined) return { kind: 'allow', rule };
  const what = `${to.method === undefined ? '' : `${to.method} `}${to.host}:${to.port}`;
  return { kind: 'deny', reason: `${what} is not in ${whose} egress allowlist` };
}

/** The tenant's rules, narrowed by the agent's when it has any (undefined: the tenant's alone). */
export function decide(
  tenant: readonly EgressRule[],
  agent: readonly EgressRule[] | undefined,
  to: Destination,
): RuleDecision {
  const outer = matchRules(tenant, to, "the tenant's");
  if (outer.kind === 'deny' || agent === undefined) return outer;
  const inner = matchRules(agent, to, "the agent's");
  return inner.kind === 'deny' ? inner : outer;
}
