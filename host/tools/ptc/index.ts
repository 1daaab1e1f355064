// Public entry of code mode (PTC): the executor the API mounts on the code preset's scope. Kept out
// of host/tools/index.ts because it pulls in sdk-gen and the isolate host's types and renderer; the
// isolate host itself (and isolated-vm, which only its workers load) is injected by the caller.
export { createPtcExecutor, type CodeRunError, type PtcExecutorOptions } from './executor.ts';
export { type RunCodeArgs, type RunCodeValue, failureMessage, runCodeSchema } from './run-code.ts';
export { programValueOf, type SubImage } from './bridge.ts';
export { createSdkCache, type CodeModeSdk, type SdkCache } from './sdk-cache.ts';
