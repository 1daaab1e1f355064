// The door of policies/: policy plugins (factories that install pre-execute listeners, guards and
// wrappers on a tool scope), the spec form that names one as JSON, and an agent's policy as the
// API takes it. Code outside policies/ installs policies through this module only.

export { AgentPolicy, agentPolicies } from './agent.ts';
export { globToRegExp } from './glob.ts';
export { planModeGuard, planModePolicy } from './plan-mode.ts';
export { type RulesPolicyConfig, rulesPolicy } from './rules.ts';
export { installPolicies, PolicySpec, policyFromConfig } from './spec.ts';
export { type TimeoutPolicyConfig, timeoutPolicy } from './timeout.ts';
export type { Policy, PolicyTarget } from './types.ts';
