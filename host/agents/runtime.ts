// The ToolRuntime adapter over host/tools' registry: a preset is the registry's named child scope
// of the global layer, set up from the preset's entry (host/agents/presets/): its restriction mask
// and its own registrations. Each agent gets its own child of its preset (its restrictions, its
// policies installed through policies/, its remote tools), optionally under a layer of its own
// tenant's (options.parentOf: the tenant's `skill` tool, there once options.ready settled: every
// resolve awaits it). Conditional tools are resolved once per
// describe and per batch, the way a model step would, or once per step (./steps.ts) that a client
// opens to describe and call against the same set.
// Invariants: an agent's tools fail closed once disposed (its agent deleted or the service closed):
// a guard installed first and never removed denies every call still made through the scope, so a
// program or workflow that outlives its agent cannot run anything without its policy. A registry's
// preset layer is set up from its entry once, however many runtimes share the registry.

import { installPolicies, type PolicySpec, planModePolicy } from '../../policies/index.ts';
import { messageOf, SandboxError } from '../errors.ts';
import { installWriteScopes } from '../teams/board/guard.ts';
import type { Disposer, ToolRegistry, ToolScope } from '../tools/index.ts';
import type { AgentScope } from '../tools/types.ts';
import { installCheckpoints } from './checkpoints/wrapper.ts';
import { type Preset, presetEntry } from './presets/index.ts';
import { createSteps, type StepOptions } from './steps.ts';
import type { AgentTools, AgentToolsSpec, ToolRuntime } from './types.ts';

/** Preset layers already set up from their entries (registry.scope(name) is memoised per registry). */
const setUp = new WeakSet<ToolScope>();

const presetScope = (registry: ToolRegistry, preset: Preset): ToolScope => {
  const scope = registry.scope(preset);
  if (!setUp.has(scope)) {
    const entry = presetEntry(preset);
    scope.restrict(entry.admits);
    for (const definition of entry.adds) scope.register(definition);
    setUp.add(scope);
  }
  return scope;
};

/** Installs; a bad user-supplied config is INVALID_ARGUMENTS (the client's mistake), not a server fault. */
const installAgentPolicies = (scope: ToolScope, specs: readonly PolicySpec[]): Disposer | undefined => {
  if (specs.length === 0) return undefined;
  try {
    return installPolicies(scope, specs);
  } catch (error) {
    throw new SandboxError('INVALID_ARGUMENTS', messageOf(error), { cause: error });
  }
};

export interface RegistryRuntimeOptions {
  /**
   * The layer between an agent's preset and the agent itself (its tenant's: skill-layers.ts).
   * Default: none, the agent's scope is a child of its preset's.
   */
  parentOf?: (preset: ToolScope, agent: AgentScope) => ToolScope;
  /** Settles when the layer parentOf gave is complete (its catalog read); awaited before each resolve. */
  ready?: (agent: AgentScope) => Promise<void>;
  /** How long steps last and how many an agent keeps (./steps.ts). */
  steps?: StepOptions;
}

export const createRegistryRuntime = (
  registry: ToolRegistry,
  options: RegistryRuntimeOptions = {},
): ToolRuntime => {
  return {
    presetTools: (preset) =>
      presetScope(registry, preset)
        .definitions()
        .map((d) => d.name),

    forAgent(spec: AgentToolsSpec): AgentTools {
      const preset = presetScope(registry, spec.preset);
      const scope = (options.parentOf?.(preset, spec.agent) ?? preset).child(`agent:${spec.agent.id}`);
      let retired = false;
      scope.guard(() =>
        retired
          ? `Agent ${spec.agent.id} is gone (deleted, or the service stopped); nothing runs for it.`
          : undefined,
      );
      // Plan mode holds back every mutating call of the agent's scope, inner ones included.
      planModePolicy().install(scope);
      // While it holds team tasks with write scopes, its file writes stay inside them.
      installWriteScopes(scope);
      // Its file calls that name what they write are checkpointed (./checkpoints/), inner ones too.
      installCheckpoints(scope);
      const steps = createSteps(options.steps);
      const disposers: Disposer[] = [];
      try {
        if (spec.restrict) disposers.push(scope.restrict(spec.restrict));
        const policy = installAgentPolicies(scope, spec.policies);
        if (policy) disposers.push(policy);
        for (const definition of spec.own) disposers.push(scope.register(definition));
      } catch (error) {
        for (const dispose of disposers) dispose();
        throw error;
      }
      const resolve = async (signal?: AbortSignal) => {
        await options.ready?.(spec.agent);
        return scope.resolve({ agent: spec.agent, ...(signal === undefined ? {} : { signal }) });
      };
      return {
        async describe() {
          const set = await resolve();
          try {
            return scope.surface(spec.mode, set);
          } finally {
            set.dispose();
          }
        },
        async step() {
          const set = await resolve();
          const { id, expiresAt } = steps.open(set);
          return { id, expiresAt, tools: scope.surface(spec.mode, set) };
        },
        async execute(calls, signal, provenance, step) {
          if (retired) throw new SandboxError('NOT_FOUND', `Agent ${spec.agent.id} was deleted.`);
          // A step's set outlives the batch (its retries reuse it); a batch's own ends with it.
          const owned = step === undefined;
          const set = owned ? await resolve(signal) : steps.take(step);
          try {
            // A plugin's code calls tools directly, whatever surface the model is shown.
            return await scope.execute(calls, {
              agent: spec.agent,
              mode: provenance === undefined ? spec.mode : 'native',
              toolSet: set,
              signal,
              ...(provenance === undefined ? {} : { provenance }),
            });
          } finally {
            if (owned) set.dispose();
          }
        },
        register: (definition) => scope.register(definition),
        inherits: (name) => registry.global.get(name) !== undefined || scope.parent?.get(name) !== undefined,
        dispose() {
          retired = true;
          steps.dispose();
          for (const dispose of disposers.splice(0)) dispose();
        },
      };
    },
  };
};
