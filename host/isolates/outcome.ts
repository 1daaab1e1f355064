// A worker's report of how a run ended, turned into the caller's outcome: shape-checked (the worker
// may have crashed or be hostile), capped, and with a runtime error's stack mapped to the model's
// own lines. Nothing of the worker's text reaches the caller without a size cap, and no value nested
// past MAX_VALUE_DEPTH (arguments.ts).
import { MAX_VALUE_DEPTH, nestedDeeperThan } from './arguments.ts';
import type { Settled } from './host-run.ts';
import type { WorkerOutcome } from './protocol.ts';
import { clip, MAX_ERROR_CHARS } from './protocol.ts';
import { mapStack } from './stack.ts';
import type { FailureKind, JsonValue } from './types.ts';

const FAILURE_KINDS = new Set<FailureKind>([
  'compile',
  'runtime',
  'timeout',
  'memory',
  'output_limit',
  'aborted',
  'crash',
  'limit',
  'stalled',
]);
const MAX_LOG_LINES = 10_000;

/** `map` is the source map of the program the worker ran (compile.ts). */
export function settledOf(outcome: WorkerOutcome, map: string): Settled {
  const raw = outcome as Partial<Record<string, unknown>>;
  const logs = Array.isArray(raw.logs)
    ? raw.logs.filter((l): l is string => typeof l === 'string').slice(0, MAX_LOG_LINES)
    : [];
  if (raw.ok === true) {
    if (raw.valueJson === undefined) return { ok: true, value: undefined, logs };
    let value: JsonValue;
    try {
      value = JSON.parse(String(raw.valueJson)) as JsonValue;
    } catch {
      return { ok: false, kind: 'runtime', message: 'the program returned an unreadable value', logs };
    }
    if (nestedDeeperThan(value, MAX_VALUE_DEPTH)) {
      const message = `the return value nests arrays or objects more than ${MAX_VALUE_DEPTH} levels deep`;
      return { ok: false, kind: 'limit', message, logs };
    }
    return { ok: true, value, logs };
  }
  const kind = FAILURE_KINDS.has(raw.kind as FailureKind) ? (raw.kind as FailureKind) : 'crash';
  let message = clip(typeof raw.message === 'string' ? raw.message : 'the run failed', MAX_ERROR_CHARS);
  if (kind === 'runtime' && typeof raw.stack === 'string') {
    const frames = mapStack(raw.stack, map);
    if (frames.length > 0) message = `${message}\n${frames.join('\n')}`;
  }
  return { ok: false, kind, message, logs };
}
