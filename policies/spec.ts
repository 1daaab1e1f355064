// A policy spec: one policy as JSON, `{ type, config }`, the form an agent's policies take (a list
// of specs) and the only way code outside policies/ gets a policy installed. The spec names the
// factory; the factory validates the config, so a bad config is CONFIG_INVALID naming each field.
import * as v from 'valibot';
import { type Disposer, disposer } from '../host/tools/disposer.ts';
import { rulesPolicy } from './rules.ts';
import { timeoutPolicy } from './timeout.ts';
import { type Policy, type PolicyTarget, parseConfig } from './types.ts';

export const PolicySpec = v.variant('type', [
  v.strictObject({ type: v.literal('timeout'), config: v.optional(v.unknown()) }),
  v.strictObject({ type: v.literal('rules'), config: v.unknown() }),
]);

export type PolicySpec = v.InferOutput<typeof PolicySpec>;

/** `{ type: 'timeout' | 'rules', config }` → a validated policy; anything else is CONFIG_INVALID. */
export const policyFromConfig = (spec: unknown): Policy => {
  const parsed = parseConfig('policy', PolicySpec, spec);
  return parsed.type === 'timeout'
    ? timeoutPolicy((parsed.config ?? {}) as never)
    : rulesPolicy(parsed.config as never);
};

/**
 * Installs the specs in order on `target`, all or nothing: every spec is validated before the first
 * is installed. The disposer removes them all.
 */
export const installPolicies = (target: PolicyTarget, specs: readonly unknown[]): Disposer => {
  const policies = specs.map(policyFromConfig);
  const installed: Disposer[] = [];
  const uninstall = disposer(() => {
    for (const dispose of installed.splice(0).reverse()) dispose();
  });
  try {
    for (const policy of policies) installed.push(policy.install(target));
  } catch (error) {
    uninstall();
    throw error;
  }
  return uninstall;
};
