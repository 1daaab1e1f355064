// Public entry of code mode (PTC): the executor the API mounts on the code preset's scope. Kept out
// of host/tools/index.ts because it pulls in sdk-gen and the isolate host's types and renderer; the
// isolate host itself (and isolated-vm, which only its workers load) is injected by the caller.

export { programValueOf, type SubImage } from './bridge.ts';
export { type CodeRunError, createPtcExecutor, type PtcExecutorOptions } from './executor.ts';
export {
  CODE_MODE_DEFAULTS,
  CODE_MODE_MAXIMA,
  type CodeModeBudget,
  type CodeModeRequest,
  checkCodeMode,
  resolveCodeMode,
} from './limits.ts';
export { failureMessage, type RunCodeArgs, type RunCodeValue, runCodeSchema } from './run-code.ts';
export { type CodeModeSdk, createSdkCache, type SdkCache } from './sdk-cache.ts';
