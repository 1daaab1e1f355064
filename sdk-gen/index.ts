// sdk-gen public entry: JSON Schemas of the visible tools → the typed `tools.*` SDK for code
// mode. Loads nothing but its own modules (no isolated-vm, no dockerode, no host code).
export { generateSdk, SDK_BANNER } from './generate.ts';
export { bindToolNames, toIdentifier } from './names.ts';
export { type RunCodeLimits, runCodeDescription } from './run-code-description.ts';
export type {
  GeneratedSdk,
  GenerateOptions,
  JSONSchema,
  NameBinding,
  SdkDiagnostic,
  SdkTool,
} from './types.ts';
