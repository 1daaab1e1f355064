// Checks a run request before anything is compiled or sent to a worker: limits are sane numbers,
// the code fits its cap, bindings are plain names, globals are JSON under a cap and cannot shadow
// `tools`, `console` or a builtin. A problem comes back as data (a FailureKind and a message).
import type { FailureKind, RunLimits, RunRequest } from './types.ts';

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
const RESERVED = new Set([
  'tools',
  'console',
  'globalThis',
  '__main',
  'undefined',
  'NaN',
  'Infinity',
  'eval',
  'arguments',
]);
const MAX_BINDINGS = 1_000;
const MAX_BINDING_NAME = 128;

export interface RequestProblem {
  kind: FailureKind;
  message: string;
}

export const checkRequest = (request: RunRequest, limits: RunLimits): RequestProblem | undefined => {
  for (const [key, value] of Object.entries(limits)) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
      return { kind: 'limit', message: `limit ${key} must be a positive number` };
    }
  }
  if (typeof request.code !== 'string') return { kind: 'compile', message: 'the code must be a string' };
  const codeBytes = Buffer.byteLength(request.code, 'utf8');
  if (codeBytes > limits.maxCodeBytes) {
    return {
      kind: 'limit',
      message: `the code is ${codeBytes} bytes, over the ${limits.maxCodeBytes}-byte limit`,
    };
  }
  if (typeof request.onCall !== 'function') return { kind: 'crash', message: 'the run has no call handler' };
  if (!Array.isArray(request.bindings) || request.bindings.length > MAX_BINDINGS) {
    return { kind: 'limit', message: `bindings must be a list of at most ${MAX_BINDINGS} names` };
  }
  for (const name of request.bindings) {
    if (typeof name !== 'string' || name.length === 0 || name.length > MAX_BINDING_NAME) {
      return { kind: 'limit', message: `binding names must be 1-${MAX_BINDING_NAME} characters` };
    }
  }
  const globals = request.globals ?? {};
  for (const key of Object.keys(globals)) {
    if (!IDENTIFIER.test(key) || RESERVED.has(key) || key in globalThis) {
      return { kind: 'limit', message: `"${key.slice(0, 64)}" cannot be a program global` };
    }
  }
  let json: string;
  try {
    json = JSON.stringify(globals);
  } catch {
    return { kind: 'limit', message: 'globals must be JSON' };
  }
  if (json.length > limits.maxCallResultBytes) {
    return {
      kind: 'limit',
      message: `globals are ${json.length} bytes of JSON, over the ${limits.maxCallResultBytes}-byte limit`,
    };
  }
  return undefined;
};
