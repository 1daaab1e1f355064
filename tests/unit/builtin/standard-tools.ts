// The builtin tools the standard preset inherits, for tests that set up a registry by hand. Derived
// from the preset's entry, so the tests do not list a preset's tools either.
import { admitsTool, presetEntry } from '../../../host/agents/presets/index.ts';
import { builtinTools } from '../../../host/tools/builtin/index.ts';
import type { ToolDefinition } from '../../../host/tools/index.ts';

export const standardSandboxTools = (): ToolDefinition[] =>
  builtinTools().filter((tool) => admitsTool(presetEntry('standard'), tool.name));
