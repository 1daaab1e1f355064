// A run's traffic with its program (worker-run.ts wires it to the slot's bridge callbacks): the
// program's tool calls, its console output and its result coming out, settled calls going in.
// Invariants: every string that comes out of the isolate is treated as untrusted text and
// size-checked (call count and sizes, output, result); nothing of the program is honoured once the
// run has finished; only calls the run has pending are settled, each once.
import { LOG_LIMIT } from './prelude.ts';
import { clip, MAX_ERROR_CHARS, MAX_STACK_CHARS } from './protocol.ts';
import { enter } from './worker-entry.ts';
import type { Failure, RunState, Settled } from './worker-run-state.ts';
import { finish } from './worker-run-state.ts';

export function onCall(s: RunState, isolateCallId: unknown, name: unknown, argsJson: unknown): void {
  if (s.finished) return;
  const { limits } = s;
  if (
    typeof isolateCallId !== 'number' ||
    typeof name !== 'string' ||
    typeof argsJson !== 'string' ||
    !s.bindings.has(name)
  ) {
    finish(s, { kind: 'runtime', message: 'the bridge was called with an unknown tool name' });
    return;
  }
  if (++s.calls > limits.maxCalls || argsJson.length > limits.maxCallBytes) {
    finish(s, {
      kind: 'limit',
      message: `call limits exceeded (${limits.maxCalls} calls, ${limits.maxCallBytes} bytes)`,
    });
    return;
  }
  const callId = ++s.nextCallId;
  s.pending.set(callId, isolateCallId);
  s.io.call({ t: 'call', id: s.msg.id, callId, name, argsJson });
}

export function onDone(s: RunState, result: unknown): void {
  if (!s.finished) finish(s, parseResult(result, s.limits.maxResultBytes));
}

export function onLog(s: RunState, code: unknown, text: unknown): void {
  if (s.finished || typeof text !== 'string') return;
  if (code === LOG_LIMIT) {
    finish(s, { kind: 'limit', message: clip(text, MAX_ERROR_CHARS) });
    return;
  }
  const { limits } = s;
  const room = limits.maxOutputBytes - s.outBytes;
  s.outBytes += text.length + 1;
  if (s.outBytes <= limits.maxOutputBytes) {
    s.logs.push(text);
    return;
  }
  if (room > 0) s.logs.push(text.slice(0, room));
  finish(s, { kind: 'output_limit', message: `console output exceeded ${limits.maxOutputBytes} bytes` });
}

/** Settles the given calls (host call id, envelope); unknown ids and non-strings are ignored. */
export function deliverResults(s: RunState, results: ReadonlyArray<readonly [unknown, unknown]>): void {
  if (s.finished) return;
  const ids: number[] = [];
  const envelopes: string[] = [];
  for (const [callId, envelope] of results) {
    const isolateCallId = s.pending.get(callId as number);
    if (isolateCallId === undefined || typeof envelope !== 'string') continue;
    s.pending.delete(callId as number);
    ids.push(isolateCallId);
    envelopes.push(envelope);
  }
  // One result crosses as a number and a string: nothing to serialise as arrays on the way in.
  if (ids.length === 1) enter(s, s.slot.deliver, [ids[0], envelopes[0]]);
  else if (ids.length > 1) enter(s, s.slot.deliver, [ids, envelopes]);
}

const FAILURE_KINDS = new Set(['compile', 'runtime', 'limit']);

const parseResult = (result: unknown, maxResultBytes: number): Settled => {
  if (typeof result !== 'string' || result.length === 0)
    return { kind: 'runtime', message: 'the program produced no result' };
  const tag = result[0];
  if (tag === 'U') return { ok: true, valueJson: undefined };
  if (tag === 'V') {
    if (result.length - 1 > maxResultBytes)
      return { kind: 'limit', message: 'the return value is over the size limit' };
    return { ok: true, valueJson: result.slice(1) };
  }
  try {
    const parsed = JSON.parse(result.slice(1)) as Record<string, unknown>;
    const kind = typeof parsed.kind === 'string' && FAILURE_KINDS.has(parsed.kind) ? parsed.kind : 'runtime';
    const name = typeof parsed.name === 'string' ? parsed.name : 'Error';
    const message = typeof parsed.message === 'string' ? parsed.message : '';
    const stack = typeof parsed.stack === 'string' ? clip(parsed.stack, MAX_STACK_CHARS) : undefined;
    const text = kind === 'limit' ? message : `${name}: ${message}`;
    return {
      kind: kind as Failure['kind'],
      message: clip(text, MAX_ERROR_CHARS),
      ...(stack ? { stack } : {}),
    };
  } catch {
    return { kind: 'runtime', message: 'the program produced an unreadable result' };
  }
};
