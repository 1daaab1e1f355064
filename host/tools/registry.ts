// The public face of the tool runtime: createRegistry() and ToolScope. The registry itself is the
// global layer; `registry.scope(name)` gives a memoised preset layer and `scope.child(name)` an
// agent layer. Lookups read layers live (nothing is copied into a child, nothing flows up), and
// each scope caches its effective view until the registry changes. Batches pick the current
// executor for the presentation mode when they start.
import { SandboxError } from '../errors.ts';
import type { EventLog } from '../store/types.ts';
import { runBatch } from './batch.ts';
import type { CallEnv } from './call-env.ts';
import type { Disposer } from './disposer.ts';
import { createNativeExecutor, type Executor, type ExecutorBatch } from './executor.ts';
import type { Guard, Phase, PhaseListeners } from './hooks.ts';
import {
  createLayer,
  executorOf,
  guardIn,
  hookIn,
  type Layer,
  mountIn,
  RESERVED_NAME,
  type RegistryOptions,
  type RegistryState,
  type Restriction,
  registerIn,
  restrictIn,
  visibleOf,
} from './layers.ts';
import { runBody } from './pipeline.ts';
import { type Condition, type Registration, type ResolvedToolSet, resolveToolSet } from './resolved-set.ts';
import {
  type AgentScope,
  type CallProvenance,
  type ModelSelection,
  PRESENTATION_MODES,
  type PresentationMode,
  type ToolCall,
  type ToolDefinition,
  type ToolResult,
  type ToolSchema,
} from './types.ts';

export interface ResolveContext {
  agent: AgentScope;
  modelSelection?: ModelSelection;
  signal?: AbortSignal;
}

export interface ExecuteOptions {
  agent: AgentScope;
  /** Which surface the model was shown. Default 'native'. */
  mode?: PresentationMode;
  /** The step's resolved set; without one, conditional tools are UNKNOWN_TOOL. */
  toolSet?: ResolvedToolSet;
  /** Caller-owned cancellation for every call of the batch. */
  signal?: AbortSignal;
  /** Overrides the registry's log for this batch; `null` records nothing (calls outside a step). */
  log?: EventLog | null;
  /** Pool size for consecutive concurrency-safe calls. Default: the registry's (8). */
  concurrency?: number;
  /** Whose code makes these calls (a plugin's): logged with each, and log-only. Default: none. */
  provenance?: CallProvenance;
}

export interface ToolScope {
  readonly id: number;
  readonly name: string;
  readonly parent: ToolScope | undefined;
  /** A new nearer layer (e.g. one agent) that reads this one live and never changes it. */
  child(name: string): ToolScope;
  register(definition: ToolDefinition, options?: { when?: Condition }): Disposer;
  /** Masks inherited tools of this scope and its children; masks intersect; own tools survive. */
  restrict(restriction: Restriction): Disposer;
  on<P extends Phase>(phase: P, listener: PhaseListeners[P]): Disposer;
  guard(guard: Guard): Disposer;
  mount(executor: Executor): Disposer;
  /** The definition as this scope sees it; without a set, conditions are not evaluated. */
  get(name: string, toolSet?: ResolvedToolSet): ToolDefinition | undefined;
  definitions(toolSet?: ResolvedToolSet): ToolDefinition[];
  schemas(toolSet?: ResolvedToolSet): ToolSchema[];
  /** The execution lookup: applies the set; without one, conditional registrations are excluded. */
  executable(name: string, toolSet?: ResolvedToolSet): ToolDefinition | undefined;
  /** Evaluates conditions once for a step. A throwing condition rejects with TOOL_ACTIVATION_FAILED. */
  resolve(context: ResolveContext): Promise<ResolvedToolSet>;
  /** Exactly the tool schemas the model sees in this mode. */
  surface(mode: PresentationMode, toolSet?: ResolvedToolSet): ToolSchema[];
  execute(calls: readonly ToolCall[], options: ExecuteOptions): Promise<ToolResult[]>;
}

export interface ToolRegistry {
  /** The global layer. */
  readonly global: ToolScope;
  /** A named child of the global layer (a preset), created on first use. */
  scope(name: string): ToolScope;
  get(name: string, scope: ToolScope, toolSet?: ResolvedToolSet): ToolDefinition | undefined;
  definitions(scope: ToolScope, toolSet?: ResolvedToolSet): ToolDefinition[];
  schemas(scope: ToolScope, toolSet?: ResolvedToolSet): ToolSchema[];
  executable(name: string, scope: ToolScope, toolSet?: ResolvedToolSet): ToolDefinition | undefined;
  surface(scope: ToolScope, mode: PresentationMode, toolSet?: ResolvedToolSet): ToolSchema[];
}

const NEVER = new AbortController().signal;

const admitted = (
  layer: Layer,
  registration: Registration,
  toolSet: ResolvedToolSet | undefined,
  executable: boolean,
): boolean =>
  toolSet === undefined
    ? !(executable && registration.when !== undefined)
    : toolSet.scopeId === layer.id && toolSet.admits(registration);

const noExecutor = (kind: string, layer: Layer): SandboxError =>
  new SandboxError(
    'NO_EXECUTOR',
    `No ${kind} executor is mounted for scope ${layer.name}; mount one before describing or running tools in this mode.`,
  );

const checkMode = (mode: unknown): PresentationMode => {
  if (!PRESENTATION_MODES.includes(mode as PresentationMode)) {
    throw new SandboxError(
      'CONFIG_INVALID',
      `Presentation mode ${JSON.stringify(mode)} is unknown; use native, code or both.`,
    );
  }
  return mode as PresentationMode;
};

export const createRegistry = (options: RegistryOptions = {}): ToolRegistry => {
  const concurrency = options.concurrency ?? 8;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new SandboxError(
      'CONFIG_INVALID',
      `concurrency must be a positive integer, got ${String(concurrency)}.`,
    );
  }
  const state: RegistryState = { version: 0, nextLayerId: 1, options, body: runBody };

  const makeScope = (layer: Layer, parent: ToolScope | undefined): ToolScope => {
    const definitionsOf = (toolSet: ResolvedToolSet | undefined, executable: boolean): ToolDefinition[] => {
      const out: ToolDefinition[] = [];
      for (const registration of visibleOf(state, layer).values()) {
        if (admitted(layer, registration, toolSet, executable)) out.push(registration.definition);
      }
      return out;
    };
    const lookup = (
      name: string,
      toolSet: ResolvedToolSet | undefined,
      executable: boolean,
    ): ToolDefinition | undefined => {
      const registration = visibleOf(state, layer).get(name);
      return registration !== undefined && admitted(layer, registration, toolSet, executable)
        ? registration.definition
        : undefined;
    };
    const batchOf = (env: CallEnv, calls: readonly ToolCall[]): ExecutorBatch => ({
      calls,
      agent: env.agent,
      toolSet: env.toolSet,
      signal: env.signal,
      definitions: () => definitionsOf(env.toolSet, true),
      run: (subset, runOptions) => runBatch(env, subset, runOptions),
    });

    const scope: ToolScope = {
      id: layer.id,
      name: layer.name,
      parent,
      child: (name) => makeScope(createLayer(state, name, layer), scope),
      register: (definition, registerOptions) => registerIn(state, layer, definition, registerOptions?.when),
      restrict: (restriction) => restrictIn(state, layer, restriction),
      on: (phase, listener) => hookIn(state, layer, phase, listener),
      guard: (guard) => guardIn(state, layer, guard),
      mount: (executor) => mountIn(state, layer, executor),
      get: (name, toolSet) => lookup(name, toolSet, false),
      definitions: (toolSet) => definitionsOf(toolSet, false),
      schemas: (toolSet) =>
        definitionsOf(toolSet, false).map((d) => ({
          name: d.name,
          description: d.description,
          parameters: d.parameters,
        })),
      executable: (name, toolSet) => lookup(name, toolSet, true),
      resolve: (context) =>
        resolveToolSet(layer.id, visibleOf(state, layer).values(), {
          agent: context.agent,
          modelSelection: context.modelSelection,
          signal: context.signal ?? NEVER,
        }),
      surface(mode, toolSet) {
        const definitions = definitionsOf(toolSet, true);
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
      },
      async execute(calls, executeOptions) {
        const mode = checkMode(executeOptions.mode ?? 'native');
        const env: CallEnv = {
          state,
          layer,
          agent: executeOptions.agent,
          toolSet: executeOptions.toolSet,
          signal: executeOptions.signal ?? NEVER,
          log: executeOptions.log === null ? undefined : (executeOptions.log ?? options.log),
          approvals: options.approvals,
          concurrency: executeOptions.concurrency ?? concurrency,
          ...(executeOptions.provenance ? { provenance: executeOptions.provenance } : {}),
        };
        const native = mode === 'code' ? undefined : executorOf(layer, 'native');
        if (mode !== 'code' && native === undefined) throw noExecutor('native', layer);
        if (mode === 'native') return (native as Executor).execute(batchOf(env, calls));
        const ptc = executorOf(layer, 'ptc');
        if (ptc === undefined) throw noExecutor('ptc', layer);
        // Split into consecutive runs by executor; run_code is exclusive, so running the segments one
        // after another keeps the scheduler's order and barriers.
        const results: ToolResult[] = [];
        for (let i = 0; i < calls.length; ) {
          const program = (calls[i] as ToolCall).name === RESERVED_NAME;
          let j = i + 1;
          while (j < calls.length && ((calls[j] as ToolCall).name === RESERVED_NAME) === program) j++;
          const segment = calls.slice(i, j);
          if (program) results.push(...(await ptc.execute(batchOf(env, segment))));
          else if (native !== undefined) results.push(...(await native.execute(batchOf(env, segment))));
          else {
            results.push(
              ...(await runBatch(env, segment, {
                refuse: (call) => ({
                  code: 'UNKNOWN_TOOL',
                  message: `Only run_code is callable in code mode; call ${call.name} as tools.${call.name}() inside a program.`,
                }),
              })),
            );
          }
          i = j;
        }
        return results;
      },
    };
    return scope;
  };

  const rootLayer = createLayer(state, 'global', undefined);
  rootLayer.executors.set('native', createNativeExecutor());
  const global = makeScope(rootLayer, undefined);
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
