// The public face of the tool runtime: createRegistry() and ToolScope. The registry itself is the
// global layer; `registry.scope(name)` gives a memoised preset layer and `scope.child(name)` an
// agent layer. Lookups read layers live (nothing is copied into a child, nothing flows up), and
// each scope caches its effective view until the registry changes. This module wires the parts:
// layers.ts holds the layers and what they register; scope-view.ts what a scope shows (definitions,
// lookups, the model's surface); scope-execute.ts runs a batch through the mode's executors;
// scope-types.ts holds the shapes.
import { SandboxError } from '../errors.ts';
import { createNativeExecutor } from './executor.ts';
import {
  createLayer,
  guardIn,
  hookIn,
  type Layer,
  mountIn,
  type RegistryOptions,
  type RegistryState,
  registerIn,
  restrictIn,
  visibleOf,
} from './layers.ts';
import { runBody } from './pipeline.ts';
import { resolveToolSet } from './resolved-set.ts';
import { executeIn, NEVER } from './scope-execute.ts';
import type { ToolRegistry, ToolScope } from './scope-types.ts';
import { definitionsOf, lookup, surfaceOf } from './scope-view.ts';

export type { ExecuteOptions, ResolveContext, ToolRegistry, ToolScope } from './scope-types.ts';

function makeScope(
  state: RegistryState,
  concurrency: number,
  layer: Layer,
  parent: ToolScope | undefined,
): ToolScope {
  const scope: ToolScope = {
    id: layer.id,
    name: layer.name,
    parent,
    child: (name) => makeScope(state, concurrency, createLayer(state, name, layer), scope),
    register: (definition, registerOptions) => registerIn(state, layer, definition, registerOptions?.when),
    restrict: (restriction) => restrictIn(state, layer, restriction),
    on: (phase, listener) => hookIn(state, layer, phase, listener),
    guard: (guard) => guardIn(state, layer, guard),
    mount: (executor) => mountIn(state, layer, executor),
    get: (name, toolSet) => lookup(state, layer, name, toolSet, false),
    definitions: (toolSet) => definitionsOf(state, layer, toolSet, false),
    schemas: (toolSet) =>
      definitionsOf(state, layer, toolSet, false).map((d) => ({
        name: d.name,
        description: d.description,
        parameters: d.parameters,
      })),
    executable: (name, toolSet) => lookup(state, layer, name, toolSet, true),
    resolve: (context) =>
      resolveToolSet(layer.id, visibleOf(state, layer).values(), {
        agent: context.agent,
        modelSelection: context.modelSelection,
        signal: context.signal ?? NEVER,
      }),
    surface: (mode, toolSet) => surfaceOf(state, layer, mode, toolSet),
    execute: (calls, executeOptions) => executeIn(state, layer, concurrency, calls, executeOptions),
  };
  return scope;
}

export const createRegistry = (options: RegistryOptions = {}): ToolRegistry => {
  const concurrency = options.concurrency ?? 8;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new SandboxError(
      'CONFIG_INVALID',
      `concurrency must be a positive integer, got ${String(concurrency)}.`,
    );
  }
  const state: RegistryState = { version: 0, nextLayerId: 1, options, body: runBody };

  const rootLayer = createLayer(state, 'global', undefined);
  rootLayer.executors.set('native', createNativeExecutor());
  const global = makeScope(state, concurrency, rootLayer, undefined);
  const presets = new Map<string, ToolScope>();

  return {
    global,
    scope(name) {
      let scope = presets.get(name);
      if (scope === undefined) {
        scope = global.child(name);
        presets.set(name, scope);
      }
      return scope;
    },
    get: (name, scope, toolSet) => scope.get(name, toolSet),
    definitions: (scope, toolSet) => scope.definitions(toolSet),
    schemas: (scope, toolSet) => scope.schemas(toolSet),
    executable: (name, scope, toolSet) => scope.executable(name, toolSet),
    surface: (scope, mode, toolSet) => scope.surface(mode, toolSet),
  };
};
