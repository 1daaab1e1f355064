// The intersection of two allowlists: the rules that admit exactly what both lists admit, so an
// agent made by another (host/agents/inherit.ts) gets its parent's egress narrowed by its own, never
// more. Rules are compared in canonical form (./rules.ts canonicalRules); two rules intersect field by
// field, and a pair with nothing in common gives no rule. The list of all pairwise intersections
// admits a destination exactly when a rule of each list does, since every field is an exact set
// intersection (host patterns: ./hosts.ts; ports: default [80, 443]; methods: default any).
// Invariant: every field of EgressRule has its rule in FIELDS, so a field added to rules later
// fails the type check here until its intersection is decided.
import { hostMatches } from './hosts.ts';
import { canonicalRules, DEFAULT_PORTS, type EgressRule } from './rules.ts';

/** Nothing in common: the pair gives no rule. */
const EMPTY = Symbol('empty');
type Empty = typeof EMPTY;

/** Names and addresses both patterns match, as a pattern; EMPTY when none. */
function intersectHosts(a: string, b: string): string | Empty {
  if (a === '*') return b;
  if (b === '*') return a;
  const wildA = a.startsWith('*.');
  const wildB = b.startsWith('*.');
  if (!wildA && !wildB) return a === b ? a : EMPTY;
  if (!wildA) return hostMatches(b, a) ? a : EMPTY;
  if (!wildB) return hostMatches(a, b) ? b : EMPTY;
  // Both wildcards: the deeper one, when it lies below (or is) the other.
  if (a === b || a.endsWith(b.slice(1))) return a;
  return b.endsWith(a.slice(1)) ? b : EMPTY;
}

function intersectLists<T>(a: readonly T[], b: readonly T[]): T[] | Empty {
  const both = a.filter((x) => b.includes(x));
  return both.length === 0 ? EMPTY : both;
}

/** One entry per field of a rule: the field of the intersection (undefined: absent), or EMPTY. */
const FIELDS: {
  [K in keyof EgressRule]-?: (a: EgressRule, b: EgressRule) => EgressRule[K] | Empty;
} = {
  host: (a, b) => intersectHosts(a.host, b.host),
  ports: (a, b) =>
    a.ports === undefined && b.ports === undefined
      ? undefined
      : intersectLists(a.ports ?? DEFAULT_PORTS, b.ports ?? DEFAULT_PORTS),
  methods: (a, b) =>
    a.methods === undefined
      ? b.methods
      : b.methods === undefined
        ? a.methods
        : intersectLists(a.methods, b.methods),
};

/** The rule admitting what both admit, or undefined when they have nothing in common. */
function intersectRule(a: EgressRule, b: EgressRule): EgressRule | undefined {
  const out: Record<string, unknown> = {};
  for (const [field, rule] of Object.entries(FIELDS) as [
    keyof EgressRule,
    (a: EgressRule, b: EgressRule) => unknown,
  ][]) {
    const value = rule(a, b);
    if (value === EMPTY) return undefined;
    if (value !== undefined) out[field] = value;
  }
  return out as unknown as EgressRule;
}

/**
 * The rules admitting exactly what both lists admit (an empty list admits nothing). BAD_REQUEST
 * when a rule is invalid (the API validated both before they were stored).
 */
export function intersectRules(a: readonly EgressRule[], b: readonly EgressRule[]): EgressRule[] {
  const left = canonicalRules(a);
  const right = canonicalRules(b);
  const out: EgressRule[] = [];
  const seen = new Set<string>();
  for (const x of left)
    for (const y of right) {
      const rule = intersectRule(x, y);
      const key = JSON.stringify(rule);
      if (rule !== undefined && !seen.has(key)) {
        seen.add(key);
        out.push(rule);
      }
    }
  return out;
}
