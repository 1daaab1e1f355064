// What a plugin isolate sends out, through the one callback the prelude (prelude.ts) holds: checked
// and forwarded to the host as the worker's messages for this plugin's id.
// Invariant: everything the isolate sends is untrusted text, size-checked and shape-checked before
// anything is forwarded; a malformed message ends the plugin (`limit`), as do more tool calls in
// flight than its limit.

import { BODY_FILENAME, BODY_LINE_OFFSET } from '../../prelude.ts';
import { clip, MAX_ERROR_CHARS, MAX_STACK_CHARS } from '../../protocol.ts';
import { HOST_EVENTS, type PluginLogLine } from '../../types.ts';
import { end, type IsolateState, unloaded } from './state.ts';

const LEVELS = new Set<PluginLogLine['level']>(['debug', 'info', 'success', 'warn', 'error']);
const HOST_EVENT_NAMES = new Set<string>(HOST_EVENTS);

/** The plugin's own frames, on the lines of its host body; prelude and boundary frames dropped. */
export const bodyStack = (stack: string): string | undefined => {
  const frames: string[] = [];
  for (const line of stack.split('\n').slice(1)) {
    const match = /^\s*at (?:(.*?) \()?plugin\.js:(\d+):(\d+)\)?\s*$/.exec(line);
    if (!match) continue;
    const where = `${BODY_FILENAME}:${Number(match[2]) - BODY_LINE_OFFSET}:${match[3]}`;
    const name = match[1] !== undefined && /^[\w$.<> ]{1,80}$/.test(match[1]) ? match[1] : undefined;
    frames.push(name === undefined || name === 'eval' ? `    at ${where}` : `    at ${name} (${where})`);
    if (frames.length >= 8) break;
  }
  return frames.length === 0 ? undefined : clip(frames.join('\n'), MAX_STACK_CHARS);
};

const str = (value: unknown, max: number): string | undefined =>
  typeof value === 'string' ? clip(value, max) : undefined;
const int = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

const broken = (state: IsolateState, what: string) =>
  end(state, 'limit', `the plugin runtime received a malformed ${what}`);

/** One message out of the isolate: `type` and its JSON, both untrusted. */
export function onOut(state: IsolateState, type: unknown, json: unknown): void {
  const { id, limits, send, calls } = state;
  if (state.ended) return;
  if (typeof type !== 'string' || typeof json !== 'string') return void broken(state, 'message');
  if (json.length > state.maxMessageChars)
    return void end(state, 'limit', `a message of ${json.length} characters is over the limit`);
  let p: Record<string, unknown>;
  try {
    p = JSON.parse(json) as Record<string, unknown>;
    if (typeof p !== 'object' || p === null || Array.isArray(p)) return void broken(state, type);
  } catch {
    return void broken(state, type);
  }
  switch (type) {
    case 'started': {
      if (p.ok === true) return void send({ t: 'loaded', id, name: str(p.name, 200) ?? 'anonymous' });
      const kind = p.kind === 'compile' ? 'compile' : 'apply';
      const text = `${str(p.name, 200) ?? 'Error'}: ${str(p.message, MAX_ERROR_CHARS) ?? ''}`;
      return void end(state, kind, text, typeof p.stack === 'string' ? bodyStack(p.stack) : undefined);
    }
    case 'register': {
      const { token, name, description, parameters, safe } = p;
      if (!int(token) || typeof name !== 'string' || typeof description !== 'string')
        return void broken(state, type);
      if (typeof parameters !== 'object' || parameters === null || Array.isArray(parameters))
        return void broken(state, type);
      return void send({
        t: 'register',
        id,
        token,
        name,
        description,
        parametersJson: JSON.stringify(parameters),
        safe: safe === true,
      });
    }
    case 'unregister':
      if (!int(p.token)) return void broken(state, type);
      return void send({ t: 'unregister', id, token: p.token });
    case 'provide': {
      const { token, name, description, methods } = p;
      if (!int(token) || typeof name !== 'string' || typeof description !== 'string')
        return void broken(state, type);
      if (!Array.isArray(methods) || !methods.every((m) => typeof m === 'string'))
        return void broken(state, type);
      return void send({ t: 'provide', id, token, name, description, methods: methods as string[] });
    }
    case 'unprovide':
      if (!int(p.token)) return void broken(state, type);
      return void send({ t: 'unprovide', id, token: p.token });
    case 'listen':
      if (typeof p.name !== 'string' || !HOST_EVENT_NAMES.has(p.name)) return;
      return void send({ t: 'listen', id, name: p.name, on: p.on === true });
    case 'call': {
      const { id: callId, name, entry } = p;
      if (!int(callId) || typeof name !== 'string' || !int(entry) || calls.has(callId))
        return void broken(state, type);
      if (calls.size >= limits.maxCallsInFlight)
        return void end(state, 'limit', `more than ${limits.maxCallsInFlight} tool calls in flight`);
      calls.add(callId);
      return void send({ t: 'call', id, callId, name, entry, argsJson: JSON.stringify(p.args ?? {}) });
    }
    case 'log': {
      const level = LEVELS.has(p.level as PluginLogLine['level'])
        ? (p.level as PluginLogLine['level'])
        : 'info';
      const text = str(p.text, limits.maxLogChars);
      if (text === undefined) return void broken(state, type);
      return void send({ t: 'log', id, level, text, ...(int(p.dropped) ? { dropped: p.dropped } : {}) });
    }
    case 'done':
      if (!int(p.entry)) return void broken(state, type);
      return void send({ t: 'done', id, entry: p.entry, envelope: json });
    case 'limit':
      return void end(state, 'limit', str(p.message, MAX_ERROR_CHARS) ?? 'a limit was reached');
    case 'stopped':
      return void unloaded(state);
    default:
      return void broken(state, 'message type');
  }
}
