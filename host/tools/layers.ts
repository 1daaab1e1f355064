// Registry layers: scoped layers (global → preset → agent), restrictions, hooks, executors, and
// the lookups the pipeline and prompt assembly use. Invariants: a child layer never mutates its
// parent (it only reads it live); a duplicate name inside one layer fails; the nearest
// registration of a name wins; restriction masks filter only tools inherited from farther layers;
// `run_code` cannot be registered. Every mutation bumps one version number, which invalidates the
// per-scope caches (visible tools, hook chains) and lets calls detect a stale lookup cheaply.
import { SandboxError } from '../errors.ts';
import type { EventLog } from '../store/types.ts';
import type { Approvals } from './approvals.ts';
import { compose, type Dispatch } from './compose.ts';
import { type Disposer, disposer } from './disposer.ts';
import type { Executor, ExecutorKind } from './executor.ts';
import {
  checkPhase,
  emptyChains,
  type Guard,
  type HookChains,
  type Phase,
  type PhaseListeners,
} from './hooks.ts';
import type { Condition, Registration } from './resolved-set.ts';
import type { ToolDefinition } from './types.ts';

export const RESERVED_NAME = 'run_code';

/** `allow`: only these inherited names stay visible; `deny`: these inherited names are hidden. */
export type Restriction =
  | { allow: readonly string[]; deny?: never }
  | { deny: readonly string[]; allow?: never };

type Mask = { allow: boolean; names: ReadonlySet<string> };

export interface Layer {
  readonly id: number;
  readonly name: string;
  readonly parent: Layer | undefined;
  readonly tools: Map<string, Registration>;
  readonly masks: Set<Mask>;
  readonly hooks: HookChains;
  readonly executors: Map<ExecutorKind, Executor>;
  cache:
    | { version: number; visible: Map<string, Registration>; chains: HookChains; dispatch?: Dispatch }
    | undefined;
}

export interface RegistryState {
  version: number;
  nextLayerId: number;
  readonly options: RegistryOptions;
  /** The innermost dispatch (tool body); injected by the pipeline so the chain can be cached. */
  body: Dispatch;
}

export interface RegistryOptions {
  /** Durable log for root and inner call events. Default: none (calls are not logged). */
  log?: EventLog;
  /** Answers `ask` decisions. Default: none, so `ask` denies. */
  approvals?: Approvals;
  /** Size of the pool shared by consecutive concurrency-safe calls. Default 8. */
  concurrency?: number;
}

export const createLayer = (state: RegistryState, name: string, parent: Layer | undefined): Layer => ({
  id: state.nextLayerId++,
  name,
  parent,
  tools: new Map(),
  masks: new Set(),
  hooks: emptyChains(),
  executors: new Map(),
  cache: undefined,
});

const chainOf = (layer: Layer): Layer[] => {
  const chain: Layer[] = [];
  for (let l: Layer | undefined = layer; l !== undefined; l = l.parent) chain.unshift(l);
  return chain;
};

const admitsName = (mask: Mask, name: string): boolean => mask.names.has(name) === mask.allow;

const computeVisible = (layer: Layer): Map<string, Registration> => {
  const chain = chainOf(layer);
  const nearest = new Map<string, { registration: Registration; depth: number }>();
  chain.forEach((l, depth) => {
    for (const [name, registration] of l.tools) {
      // delete + set: inherited tools keep their order, nearer additions come after them.
      nearest.delete(name);
      nearest.set(name, { registration, depth });
    }
  });
  const visible = new Map<string, Registration>();
  for (const [name, { registration, depth }] of nearest) {
    let shown = true;
    for (let d = depth + 1; d < chain.length && shown; d++) {
      for (const mask of (chain[d] as Layer).masks) if (!admitsName(mask, name)) shown = false;
    }
    if (shown) visible.set(name, registration);
  }
  return visible;
};

const computeChains = (layer: Layer): HookChains => {
  const chains = emptyChains();
  for (const l of chainOf(layer)) {
    chains.pre.push(...l.hooks.pre);
    chains.guards.push(...l.hooks.guards);
    chains.wrappers.push(...l.hooks.wrappers);
    chains.post.push(...l.hooks.post);
    chains.result.push(...l.hooks.result);
  }
  return chains;
};

const cached = (state: RegistryState, layer: Layer) => {
  if (layer.cache?.version !== state.version) {
    layer.cache = { version: state.version, visible: computeVisible(layer), chains: computeChains(layer) };
  }
  return layer.cache;
};

/** Name → nearest visible registration (conditional ones included). */
export const visibleOf = (state: RegistryState, layer: Layer): Map<string, Registration> =>
  cached(state, layer).visible;

export const chainsOf = (state: RegistryState, layer: Layer): HookChains => cached(state, layer).chains;

/** The composed tools/execute chain around the body, built once per registry change. */
export const dispatchOf = (state: RegistryState, layer: Layer): Dispatch => {
  const cache = cached(state, layer);
  cache.dispatch ??= compose(cache.chains.wrappers, state.body);
  return cache.dispatch;
};

const bump = (state: RegistryState): void => {
  state.version++;
};

const isDefinition = (value: unknown): value is ToolDefinition => {
  const d = value as Partial<ToolDefinition> | null;
  return (
    typeof d === 'object' &&
    d !== null &&
    typeof d.name === 'string' &&
    typeof d.execute === 'function' &&
    typeof d.validateArguments === 'function' &&
    typeof d.render === 'function'
  );
};

export const registerIn = (
  state: RegistryState,
  layer: Layer,
  definition: ToolDefinition,
  when?: Condition,
): Disposer => {
  if (!isDefinition(definition)) {
    throw new SandboxError(
      'CONFIG_INVALID',
      'register() takes a definition made by defineTool() or defineJsonSchemaTool().',
    );
  }
  const name = definition.name;
  if (name === RESERVED_NAME) {
    throw new SandboxError(
      'RESERVED_TOOL_NAME',
      `"${RESERVED_NAME}" is reserved for code mode and cannot be registered or shadowed; choose another name.`,
    );
  }
  if (layer.tools.has(name)) {
    throw new SandboxError(
      'DUPLICATE_TOOL',
      `Tool ${name} is already registered in scope ${layer.name}; dispose the existing registration first or register it in a nearer scope.`,
    );
  }
  if (when !== undefined && typeof when !== 'function') {
    throw new SandboxError('CONFIG_INVALID', `The "when" condition of tool ${name} must be a function.`);
  }
  const registration: Registration = { definition, when, active: true };
  layer.tools.set(name, registration);
  bump(state);
  return disposer(() => {
    registration.active = false;
    if (layer.tools.get(name) === registration) layer.tools.delete(name);
    bump(state);
  });
};

export const restrictIn = (state: RegistryState, layer: Layer, restriction: Restriction): Disposer => {
  const r = restriction as { allow?: unknown; deny?: unknown } | null;
  const list = r?.allow ?? r?.deny;
  const valid =
    r !== null &&
    typeof r === 'object' &&
    (r.allow === undefined) !== (r.deny === undefined) &&
    Array.isArray(list) &&
    list.every((n) => typeof n === 'string');
  if (!valid) {
    throw new SandboxError(
      'CONFIG_INVALID',
      'restrict() takes exactly one of { allow: string[] } or { deny: string[] }.',
    );
  }
  const mask: Mask = { allow: r.allow !== undefined, names: new Set(list as string[]) };
  layer.masks.add(mask);
  bump(state);
  return disposer(() => {
    layer.masks.delete(mask);
    bump(state);
  });
};

const remove = <T>(list: T[], item: T): void => {
  const index = list.indexOf(item);
  if (index >= 0) list.splice(index, 1);
};

export const hookIn = <P extends Phase>(
  state: RegistryState,
  layer: Layer,
  phase: P,
  listener: PhaseListeners[P],
): Disposer => {
  checkPhase(phase, listener);
  const list = {
    'tools/pre-execute': layer.hooks.pre,
    'tools/execute': layer.hooks.wrappers,
    'tools/post-execute': layer.hooks.post,
    'tools/result': layer.hooks.result,
  }[phase] as unknown[];
  list.push(listener);
  bump(state);
  return disposer(() => {
    remove(list, listener);
    bump(state);
  });
};

export const guardIn = (state: RegistryState, layer: Layer, guard: Guard): Disposer => {
  if (typeof guard !== 'function') throw new SandboxError('CONFIG_INVALID', 'guard() takes a function.');
  layer.hooks.guards.push(guard);
  bump(state);
  return disposer(() => {
    remove(layer.hooks.guards, guard);
    bump(state);
  });
};

export const mountIn = (state: RegistryState, layer: Layer, executor: Executor): Disposer => {
  if (executor.kind !== 'native' && executor.kind !== 'ptc') {
    throw new SandboxError(
      'CONFIG_INVALID',
      `Executor ${executor.name} has kind ${String(executor.kind)}; use "native" or "ptc".`,
    );
  }
  if (layer.executors.has(executor.kind)) {
    throw new SandboxError(
      'DUPLICATE_EXECUTOR',
      `Scope ${layer.name} already has a ${executor.kind} executor; dispose it before mounting ${executor.name}.`,
    );
  }
  layer.executors.set(executor.kind, executor);
  bump(state);
  return disposer(() => {
    if (layer.executors.get(executor.kind) === executor) layer.executors.delete(executor.kind);
    bump(state);
  });
};

/** The nearest mounted executor of a kind; batches and descriptions look it up when they run. */
export const executorOf = (layer: Layer, kind: ExecutorKind): Executor | undefined => {
  for (let l: Layer | undefined = layer; l !== undefined; l = l.parent) {
    const found = l.executors.get(kind);
    if (found !== undefined) return found;
  }
  return undefined;
};
