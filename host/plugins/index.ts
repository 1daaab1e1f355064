// Public entry of the creator-plugin runtime. Loading this module does not load isolated-vm: only
// the worker processes it forks do, so the API process never holds a plugin's isolate.

export type { Instance } from './instance.ts';
export type {
  PlacementCaps,
  PlacementRequest,
  PluginPlacement,
  PluginProcessEvent,
  PluginProcesses,
  PluginProcessesOptions,
  PluginWorker,
} from './processes.ts';
export { createPluginProcesses } from './processes.ts';
export type { PluginRuntime, PluginRuntimeOptions, RunPackage, RunResult, StartInput } from './runtime.ts';
export { createPluginRuntime } from './runtime.ts';
export type {
  HostEventName,
  JsonSchema,
  JsonValue,
  PluginCapabilities,
  PluginFailure,
  PluginFailureKind,
  PluginLimits,
  PluginLogLine,
  PluginProvider,
  PluginState,
  PluginStatus,
  PluginTool,
} from './types.ts';
export { DEFAULT_PLUGIN_LIMITS, HOST_EVENTS } from './types.ts';
