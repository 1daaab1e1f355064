// host/agents public entry: the agent service, its registry adapter, presets and types.

export {
  admitsTool,
  DEFAULT_PRESET,
  defaultModeOf,
  definePreset,
  PRESETS,
  type PresetEntry,
  presetEntry,
} from './presets/index.ts';
export { defineRemoteTool, REMOTE_TOOL_TIMEOUT_MS } from './remote-tools.ts';
export { createRegistryRuntime } from './runtime.ts';
export { type AgentService, type AgentServiceOptions, createAgentService } from './service.ts';
export type * from './types.ts';
