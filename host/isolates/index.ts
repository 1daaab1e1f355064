// Public entry of the isolate host. Loading this module does not load isolated-vm: only the worker
// processes it forks do, so the API process never holds an isolate.

export { compileProgram } from './compile.ts';
export { createIsolateHost } from './host.ts';
export { NO_OUTPUT, renderOutcome } from './render.ts';
export type {
  CallHandler,
  FailureKind,
  IsolateHost,
  IsolateHostEvent,
  IsolateHostOptions,
  JsonValue,
  RunLimits,
  RunOutcome,
  RunRequest,
  RunStats,
} from './types.ts';
export { DEFAULT_LIMITS } from './types.ts';
