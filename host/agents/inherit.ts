// What an agent made by another agent (a child or teammate, host/teams/) is created from:
// its parent's settings, narrowed by whatever the child asks for, field by field, never widened.
// Allowlists intersect (restrict, egress, remote tools, plugin shadows), denials and questions add
// up (policy deny, ask and rules, with the parent's always applied), limits and budgets take the
// smaller (sandbox, codeMode), capabilities need the parent's (subagents, fetch, teams), plan mode
// is on when the parent's config says so or its session is in plan mode now; preset, mode and the
// children's workspace are the parent's. AgentService.create applies this to every agent made with
// links, whatever made it, so no path to a new agent (and its sandbox) skips it.
// Invariant: INHERITANCE has a rule for every field of CreateAgentRequest, and POLICY for every
// field of AgentPolicy (the mapped types make a field added without one fail the type check;
// tests/unit/security/inheritance.test.ts walks the API's schema for the same at run time).
import type { AgentPolicy } from '../../policies/index.ts';
import { intersectRules } from '../egress/intersect.ts';
import type {
  AgentConfig,
  AgentRestriction,
  CreateAgentRequest,
  PresentationMode,
  Preset,
  RemoteToolSpec,
} from './types.ts';

/** The parent as its children inherit it. */
export interface Parent {
  preset: Preset;
  mode: PresentationMode;
  config: AgentConfig;
  /** Its remote tools now (those registered after its creation too). */
  remoteTools: readonly RemoteToolSpec[];
  /** Its session is in plan mode now (turned on by the client, or still on from its policy). */
  planMode: boolean;
}

type Rule<K extends keyof CreateAgentRequest> = (
  parent: Parent,
  asked: CreateAgentRequest,
) => CreateAgentRequest[K] | undefined;

const union = (a: readonly string[] | undefined, b: readonly string[] | undefined): string[] | undefined =>
  a === undefined && b === undefined ? undefined : [...new Set([...(a ?? []), ...(b ?? [])])];

/** The child has it only when its parent has it, unless it asks for less. */
const capability =
  (key: 'subagents' | 'fetch') =>
  (parent: Parent, asked: CreateAgentRequest): true | undefined =>
    parent.config[key] === true && asked[key] !== false ? true : undefined;

/**
 * The smaller of each limit the parent sets. A limit the parent leaves to the service's default
 * stays at that default for the child too (what the default is, only the service knows).
 */
function smaller<T extends { [K in keyof T]?: number }>(
  parent: T | undefined,
  asked: T | undefined,
): T | undefined {
  if (parent === undefined) return undefined;
  const out = { ...parent };
  for (const key of Object.keys(parent) as (keyof T)[]) {
    const mine = parent[key] as number | undefined;
    const theirs = asked?.[key] as number | undefined;
    if (mine !== undefined && theirs !== undefined && theirs < mine) out[key] = theirs as T[keyof T];
  }
  return out;
}

/** Tools visible to the child: those both restrictions leave visible. */
function narrowRestrict(
  parent: AgentRestriction | undefined,
  asked: AgentRestriction | undefined,
): AgentRestriction | undefined {
  if (parent === undefined) return asked;
  if (asked === undefined) return parent;
  if ('allow' in parent && 'allow' in asked)
    return { allow: parent.allow.filter((t) => asked.allow.includes(t)) };
  if ('deny' in parent && 'deny' in asked) return { deny: union(parent.deny, asked.deny) ?? [] };
  const [allow, deny] =
    'allow' in parent ? [parent, asked as { deny: string[] }] : [asked as { allow: string[] }, parent];
  return { allow: allow.allow.filter((t) => !deny.deny.includes(t)) };
}

type PolicyRule = NonNullable<AgentPolicy['rules']>[number];
const decided = (rules: readonly PolicyRule[] | undefined, decision: string): PolicyRule[] =>
  (rules ?? []).filter((r) => r.decision === decision);

/**
 * One entry per field of an agent's policy. agentPolicies evaluates `deny` names, then `rules`, then
 * `ask` names, the first match deciding: the child's deny rules go before the parent's rules, its
 * ask rules after them, and its allow rules nowhere, so that for every call the child's decision is
 * the parent's or a stricter one (deny over ask over allow). (The agent's own layer is the only
 * one that installs pre-execute policies; were an outer one added, a child's `ask` could overrule its
 * denial exactly as the parent's own `ask` does.)
 */
const POLICY: { [K in keyof AgentPolicy]-?: (p: AgentPolicy, a: AgentPolicy) => AgentPolicy[K] } = {
  deny: (p, a) => union(p.deny, a.deny),
  ask: (p, a) => union(p.ask, a.ask),
  rules: (p, a) =>
    a.rules === undefined
      ? p.rules
      : [...decided(a.rules, 'deny'), ...(p.rules ?? []), ...decided(a.rules, 'ask')],
  planMode: (p, a) => (p.planMode === true || a.planMode === true ? true : undefined),
  sessions: (p, a) => (p.sessions === 'own' || a.sessions === 'own' ? 'own' : (p.sessions ?? a.sessions)),
  pluginShadows: (p, a) =>
    p.pluginShadows === undefined || a.pluginShadows === undefined
      ? p.pluginShadows
      : p.pluginShadows.filter((t) => a.pluginShadows?.includes(t)),
};

function narrowPolicy(parent: Parent, asked: AgentPolicy | undefined): AgentPolicy | undefined {
  const p = parent.config.policy ?? {};
  const a = asked ?? {};
  const out: Record<string, unknown> = {};
  for (const [key, rule] of Object.entries(POLICY) as [
    keyof AgentPolicy,
    (p: AgentPolicy, a: AgentPolicy) => unknown,
  ][]) {
    const value = rule(p, a);
    if (value !== undefined) out[key] = value;
  }
  if (parent.planMode) out.planMode = true;
  return Object.keys(out).length === 0 ? undefined : (out as AgentPolicy);
}

/** One rule per field of what an agent is created from. */
export const INHERITANCE: { [K in keyof CreateAgentRequest]-?: Rule<K> } = {
  preset: (parent) => parent.preset,
  mode: (parent) => parent.mode,
  restrict: (parent, asked) => narrowRestrict(parent.config.restrict, asked.restrict),
  policy: (parent, asked) => narrowPolicy(parent, asked.policy),
  // Limits the smaller; the runtime the parent's (a child never picks a runtime of its own).
  sandbox: (parent, asked) => {
    const { runtime, ...limits } = parent.config.sandbox ?? {};
    const { runtime: _asked, ...askedLimits } = asked.sandbox ?? {};
    const out = smaller(parent.config.sandbox === undefined ? undefined : limits, askedLimits);
    return runtime === undefined ? out : { ...out, runtime };
  },
  codeMode: (parent, asked) => smaller(parent.config.codeMode, asked.codeMode),
  egress: ({ config: { egress } }, asked) =>
    egress === undefined || asked.egress === undefined
      ? (egress ?? asked.egress)
      : { allow: intersectRules(egress.allow, asked.egress.allow) },
  // Remote tools run in the client: the parent's, as the parent has them, or fewer of them.
  remoteTools: ({ remoteTools }, asked) => {
    const kept = remoteTools.filter((t) => asked.remoteTools?.some((x) => x.name === t.name) ?? true);
    return kept.length === 0 ? undefined : kept;
  },
  subagents: capability('subagents'),
  fetch: capability('fetch'),
  // A teammate leads nothing, but sees its team's board: team mode needs a lead's.
  teams: (parent, asked) => (parent.config.teams === true && asked.teams === true ? true : undefined),
  childWorkspace: (parent) => parent.config.childWorkspace,
  isolatedWorkspace: (parent) => (parent.config.childWorkspace === 'isolated' ? true : undefined),
  // A child's workspace is its parent's (or a copy of it), never a snapshot's.
  fromSnapshot: () => undefined,
};

/** What a child of `parent` is created from: `asked` narrowed to what the parent has. */
export function inheritRequest(parent: Parent, asked: CreateAgentRequest = {}): CreateAgentRequest {
  const out: Record<string, unknown> = {};
  for (const [key, rule] of Object.entries(INHERITANCE) as [
    keyof CreateAgentRequest,
    Rule<keyof CreateAgentRequest>,
  ][]) {
    const value = rule(parent, asked);
    if (value !== undefined) out[key] = value;
  }
  return out as CreateAgentRequest;
}
