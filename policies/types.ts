// What a policy is: a named, JSON-configured factory output that installs listeners, guards or
// wrappers on a tool scope and gives back one disposer. Config is validated when the policy is
// created, so a bad per-agent config fails at install time (CONFIG_INVALID), not at the first call.
import * as v from 'valibot';
import { SandboxError } from '../host/errors.ts';
import type { Disposer, JsonValue, ToolScope } from '../host/tools/index.ts';

/** The part of a scope a policy may touch. */
export type PolicyTarget = Pick<ToolScope, 'on' | 'guard'>;

export interface Policy {
  readonly name: string;
  /** The validated config, JSON-serialisable, as the API stores it per agent. */
  readonly config: JsonValue;
  install(scope: PolicyTarget): Disposer;
}

/** Parses a policy's config or throws CONFIG_INVALID naming each bad field. */
export const parseConfig = <S extends v.GenericSchema>(
  policy: string,
  schema: S,
  config: unknown,
): v.InferOutput<S> => {
  const result = v.safeParse(schema, config);
  if (result.success) return result.output;
  const issues = result.issues.map((i) => `${v.getDotPath(i) ?? '(root)'}: ${i.message}`).join('; ');
  throw new SandboxError(
    'CONFIG_INVALID',
    `Invalid ${policy} policy config: ${issues}. Fix the config and install it again.`,
  );
};
