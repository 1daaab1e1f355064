// An agent's policy as the API takes it and the store keeps it (`{ ask?, deny?, rules?, sessions? }`), and the
// list of policy specs it stands for. The API validates requests with this schema and documents it
// in /openapi.json; the rules themselves are validated by rulesPolicy when the agent's policies are
// installed (CONFIG_INVALID naming the bad field), so their shape is stated once, in rules.ts.
import * as v from 'valibot';
import { ToolName } from '../host/tools/index.ts';
import type { PolicySpec } from './spec.ts';

const names = v.pipe(v.array(ToolName), v.maxLength(256));

export const AgentPolicy = v.strictObject({
  /** Tools that need a person's approval (an `approval` host request) before they run. */
  ask: v.optional(names),
  /** Tools that are always refused. */
  deny: v.optional(names),
  /** Rules as rulesPolicy takes them: `{ tool: glob, when?: { path: regex }, decision, reason? }`. */
  rules: v.optional(v.pipe(v.array(v.record(v.string(), v.unknown())), v.maxLength(256))),
  /** The agent starts in plan mode: only read-only tools run until a plan is approved (plan-mode.ts). */
  planMode: v.optional(v.boolean()),
  /**
   * Which sessions the session_* tools reach: every session of the agent's tenant (`tenant`, the
   * default) or only the agent's own (`own`). They never reach another tenant's.
   */
  sessions: v.optional(v.picklist(['tenant', 'own'])),
  /**
   * Built-in tools a creator plugin may shadow with a tool of its own (by default none: a plugin
   * never takes the name of a tool the agent inherits, so no policy written for it is dodged).
   */
  pluginShadows: v.optional(names),
});

export type AgentPolicy = v.InferOutput<typeof AgentPolicy>;

/**
 * The specs an agent's policy stands for: one rules policy, in this order: the `deny` names, the
 * `rules`, then the `ask` names (the first match decides). No policy, no specs.
 */
export const agentPolicies = (policy: AgentPolicy | undefined): PolicySpec[] => {
  if (policy === undefined) return [];
  const rules = [
    ...(policy.deny ?? []).map((tool) => ({
      tool,
      decision: 'deny',
      reason: `Tool ${tool} is not allowed for this agent.`,
    })),
    ...(policy.rules ?? []),
    ...(policy.ask ?? []).map((tool) => ({
      tool,
      decision: 'ask',
      reason: `The agent's policy asks before running ${tool}.`,
    })),
  ];
  return rules.length === 0 ? [] : [{ type: 'rules', config: { rules } }];
};
