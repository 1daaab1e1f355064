// rulesPolicy: an ordered list of { tool glob, optional argument conditions, decision } installed
// as a tools/pre-execute listener. The first rule whose glob and every condition match decides;
// when none matches, the earlier decision stands. Conditions test the argument at a dotted path
// (`a.b.0`) against a regular expression. The argument may be a string, number or boolean, or an
// array or object: then every string inside it (object keys included) and every number and boolean
// is tested, so `{"url": ["http://internal/x"]}` cannot slip past a rule written for a string. A
// deny or ask condition holds when ANY of them matches; an allow condition only when ALL of them
// match. A missing argument, or one with no scalar inside, never matches. The walk is bounded
// (MAX_ARGUMENT_DEPTH levels, MAX_WALK_NODES nodes); a value past those bounds fails closed.
// Tenant patterns run on the API's event loop, so they are compiled for the linear-time engine
// (host/tools/linear-regexp.ts) and one call may spend at most MATCH_BUDGET on them: a condition past the
// budget fails closed (a deny or ask rule counts it as matching, an allow rule as not matching).
// Every scalar tested costs its share of the budget, so an argument of many strings fails closed too.
import * as v from 'valibot';
import { SandboxError } from '../host/errors.ts';
import type { Decision, PreExecuteListener } from '../host/tools/index.ts';
import { MAX_ARGUMENT_DEPTH, walkScalars } from '../host/tools/json-walk.ts';
import { linearRegExp, MATCH_BUDGET, MAX_PATTERN_CHARS } from '../host/tools/linear-regexp.ts';
import { globToRegExp } from './glob.ts';
import { type Policy, parseConfig } from './types.ts';

const Rule = v.strictObject({
  tool: v.pipe(v.string(), v.minLength(1), v.maxLength(MAX_PATTERN_CHARS)),
  when: v.optional(v.record(v.pipe(v.string(), v.minLength(1)), v.string())),
  decision: v.picklist(['allow', 'deny', 'ask']),
  /** What the model (deny) or the approver (ask) reads. */
  reason: v.optional(v.string()),
});

const Config = v.strictObject({ rules: v.array(Rule) });

export type RulesPolicyConfig = v.InferInput<typeof Config>;

interface CompiledRule {
  tool: RegExp;
  when: [path: string[], pattern: RegExp][];
  decision: Decision;
}

const valueAt = (args: unknown, path: readonly string[]): unknown => {
  let value = args;
  for (const key of path) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
};

/** Matching cost left for one call's conditions (see MATCH_BUDGET). */
interface Budget {
  left: number;
}

/** Nodes one condition's walk visits at most (the API body cap allows ~500,000). */
export const MAX_WALK_NODES = 100_000;

/**
 * Whether one condition holds for `value`. `any`: some scalar matches (deny, ask); otherwise every
 * scalar must match (allow). Whatever cannot be decided within the bounds or the budget decides
 * for the stricter outcome: the condition holds for deny and ask, fails for allow.
 */
const conditionHolds = (value: unknown, pattern: RegExp, any: boolean, budget: Budget): boolean => {
  let seen = 0;
  let undecided = false;
  let found = false;
  const walk = walkScalars(
    value,
    (text) => {
      seen++;
      const cost = (text.length + 1) * (pattern.source.length + 1);
      if (cost > budget.left) {
        // Too costly to decide on the shared event loop: fail closed.
        undecided = true;
        return false;
      }
      budget.left -= cost;
      found = pattern.test(text);
      // any: stop at the first match; all: stop at the first miss.
      return any ? !found : found;
    },
    { maxDepth: MAX_ARGUMENT_DEPTH, maxNodes: MAX_WALK_NODES },
  );
  if (walk === 'too-big' || undecided) return any;
  if (seen === 0) return false;
  return walk === 'stopped' ? found : !any;
};

const matches = (rule: CompiledRule, name: string, args: unknown, budget: Budget): boolean => {
  if (!rule.tool.test(name)) return false;
  const any = rule.decision.kind !== 'allow';
  for (const [path, pattern] of rule.when) {
    const value = valueAt(args, path);
    if (value === undefined || value === null) return false;
    // Every walked scalar costs budget too, so a huge array is undecided (fail closed), not slow.
    if (!conditionHolds(value, pattern, any, budget)) return false;
  }
  return true;
};

const compile = (rule: v.InferOutput<typeof Rule>, index: number): CompiledRule => {
  const when = Object.entries(rule.when ?? {}).map(([path, source]): [string[], RegExp] => {
    try {
      return [path.split('.'), linearRegExp(source)];
    } catch (error) {
      throw new SandboxError(
        'CONFIG_INVALID',
        `Invalid rules policy config: rules.${index}.when.${path} is not a valid regular expression (${(error as Error).message}).`,
      );
    }
  });
  const decision: Decision =
    rule.decision === 'allow'
      ? { kind: 'allow' }
      : rule.decision === 'deny'
        ? {
            kind: 'deny',
            reason:
              rule.reason ?? `Policy rule ${index + 1} denies this call to a tool matching "${rule.tool}".`,
          }
        : {
            kind: 'ask',
            reason:
              rule.reason ?? `Policy rule ${index + 1} requires approval for tools matching "${rule.tool}".`,
          };
  return { tool: globToRegExp(rule.tool), when, decision };
};

export const rulesListener =
  (rules: readonly CompiledRule[]): PreExecuteListener =>
  (call) => {
    const budget: Budget = { left: MATCH_BUDGET };
    for (const rule of rules) if (matches(rule, call.name, call.arguments, budget)) return rule.decision;
    return undefined;
  };

export const rulesPolicy = (config: RulesPolicyConfig): Policy => {
  const parsed = parseConfig('rules', Config, config);
  const compiled = parsed.rules.map(compile);
  return {
    name: 'rules',
    config: JSON.parse(JSON.stringify(parsed)),
    install: (scope) => scope.on('tools/pre-execute', rulesListener(compiled)),
  };
};
