// Policy plugins: factories that install pre-execute listeners, guards and wrappers on a tool
// scope. `policyFromConfig` builds one from the JSON the API stores per agent.
import * as v from 'valibot';
import { rulesPolicy } from './rules.ts';
import { timeoutPolicy } from './timeout.ts';
import { type Policy, parseConfig } from './types.ts';

export { globToRegExp } from './glob.ts';
export { type RulesPolicyConfig, rulesPolicy } from './rules.ts';
export { type TimeoutPolicyConfig, timeoutPolicy } from './timeout.ts';
export type { Policy, PolicyTarget } from './types.ts';

const Spec = v.variant('type', [
  v.strictObject({ type: v.literal('timeout'), config: v.optional(v.unknown()) }),
  v.strictObject({ type: v.literal('rules'), config: v.unknown() }),
]);

/** `{ type: 'timeout' | 'rules', config }` → a validated policy; anything else is CONFIG_INVALID. */
export const policyFromConfig = (spec: unknown): Policy => {
  const parsed = parseConfig('policy', Spec, spec);
  return parsed.type === 'timeout'
    ? timeoutPolicy((parsed.config ?? {}) as never)
    : rulesPolicy(parsed.config as never);
};
