// What a scope shows (registry.ts wires it into each ToolScope): its definitions and lookups,
// through the layers it reads live (layers.ts), and the surface the model sees in a presentation
// mode. Invariants: without a resolved set, conditional registrations are visible to describe but
// never executable; a set resolved for another scope admits nothing; a mode whose executor is not
// mounted is NO_EXECUTOR, an unknown mode CONFIG_INVALID.
import { SandboxError } from '../errors.ts';
import { executorOf, type Layer, type RegistryState, visibleOf } from './layers.ts';
import type { Registration, ResolvedToolSet } from './resolved-set.ts';
import { PRESENTATION_MODES, type PresentationMode, type ToolDefinition, type ToolSchema } from './types.ts';

const admitted = (
  layer: Layer,
  registration: Registration,
  toolSet: ResolvedToolSet | undefined,
  executable: boolean,
): boolean =>
  toolSet === undefined
    ? !(executable && registration.when !== undefined)
    : toolSet.scopeId === layer.id && toolSet.admits(registration);

export const noExecutor = (kind: string, layer: Layer): SandboxError =>
  new SandboxError(
    'NO_EXECUTOR',
    `No ${kind} executor is mounted for scope ${layer.name}; mount one before describing or running tools in this mode.`,
  );

export const checkMode = (mode: unknown): PresentationMode => {
  if (!PRESENTATION_MODES.includes(mode as PresentationMode)) {
    throw new SandboxError(
      'CONFIG_INVALID',
      `Presentation mode ${JSON.stringify(mode)} is unknown; use native, code or both.`,
    );
  }
  return mode as PresentationMode;
};

export function definitionsOf(
  state: RegistryState,
  layer: Layer,
  toolSet: ResolvedToolSet | undefined,
  executable: boolean,
): ToolDefinition[] {
  const out: ToolDefinition[] = [];
  for (const registration of visibleOf(state, layer).values()) {
    if (admitted(layer, registration, toolSet, executable)) out.push(registration.definition);
  }
  return out;
}

export function lookup(
  state: RegistryState,
  layer: Layer,
  name: string,
  toolSet: ResolvedToolSet | undefined,
  executable: boolean,
): ToolDefinition | undefined {
  const registration = visibleOf(state, layer).get(name);
  return registration !== undefined && admitted(layer, registration, toolSet, executable)
    ? registration.definition
    : undefined;
}

/** Exactly the tool schemas the model sees in this mode. */
export function surfaceOf(
  state: RegistryState,
  layer: Layer,
  mode: PresentationMode,
  toolSet: ResolvedToolSet | undefined,
): ToolSchema[] {
  const definitions = definitionsOf(state, layer, toolSet, true);
  const out: ToolSchema[] = [];
  if (checkMode(mode) !== 'code') {
    const native =
      executorOf(layer, 'native') ??
      (() => {
        throw noExecutor('native', layer);
      })();
    out.push(...native.describe(definitions));
  }
  if (mode !== 'native') {
    const ptc =
      executorOf(layer, 'ptc') ??
      (() => {
        throw noExecutor('ptc', layer);
      })();
    out.push(...ptc.describe(definitions, toolSet?.agent));
  }
  return out;
}
