// What a plugin registers through its capabilities: tools and inspection providers, checked here
// (names, description size, counts) before the host's registry sees them, and withdrawn by token.
// Invariants: a registration the host refuses fails the whole plugin ('refused'), so a plugin never
// runs with half of what it asked for; tools and providers share one token space; each registration
// is held with its disposer so that state.ts `finish` can take back everything at the end.
import { messageOf, SandboxError } from '../../errors.ts';
import type { PluginWorkerToHost } from '../protocol.ts';
import { clip, MAX_ERROR_CHARS } from '../protocol.ts';
import type { JsonSchema, JsonValue, PluginProvider, PluginTool } from '../types.ts';
import { executeIn } from './calls.ts';
import { fail, type InstanceState, type Registration, safely } from './state.ts';

/** Tool names a plugin may register (the registry decides which it may not shadow). */
const TOOL_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
const MAX_DESCRIPTION_CHARS = 4000;

export function registerTool(
  state: InstanceState,
  message: Extract<PluginWorkerToHost, { t: 'register' }>,
): void {
  const { pluginId, limits, capabilities } = state.options;
  const { token, name, description } = message;
  let parameters: JsonSchema;
  try {
    parameters = JSON.parse(message.parametersJson) as JsonSchema;
  } catch {
    return void fail(state, {
      kind: 'refused',
      message: `tool ${clip(name, 80)}: its parameters are not JSON`,
    });
  }
  if (!TOOL_NAME.test(name))
    return void fail(state, {
      kind: 'refused',
      message: `tool ${clip(name, 80)}: a tool name is 1 to 64 letters, digits, _ or -`,
    });
  if (
    description.length > MAX_DESCRIPTION_CHARS ||
    state.registered.size >= limits.maxTools ||
    state.registered.has(token)
  )
    return void fail(state, { kind: 'refused', message: `tool ${name}: over the plugin's tool limits` });
  const tool: PluginTool = Object.freeze({
    pluginId,
    name,
    description,
    parameters,
    concurrencySafe: message.safe,
    execute: (args: JsonValue, call: { callId: string; signal: AbortSignal }) =>
      executeIn(state, token, args, call),
  });
  try {
    state.registered.set(token, { name, dispose: capabilities.registerTool(tool) });
  } catch (error) {
    fail(state, { kind: 'refused', message: clip(`tool ${name}: ${messageOf(error)}`, MAX_ERROR_CHARS) });
  }
}

export function provide(state: InstanceState, message: Extract<PluginWorkerToHost, { t: 'provide' }>): void {
  const { pluginId, limits, capabilities } = state.options;
  const { token, name, description } = message;
  const methods = [...message.methods];
  if (!TOOL_NAME.test(name) || !methods.every((m) => TOOL_NAME.test(m)))
    return void fail(state, {
      kind: 'refused',
      message: `provider ${clip(name, 80)}: names are 1 to 64 letters, digits, _ or -`,
    });
  if (
    description.length > MAX_DESCRIPTION_CHARS ||
    methods.length === 0 ||
    methods.length > limits.maxProviderMethods ||
    state.provided.size >= limits.maxProviders ||
    state.provided.has(token) ||
    state.registered.has(token)
  )
    return void fail(state, {
      kind: 'refused',
      message: `provider ${name}: over the plugin's provider limits`,
    });
  const provider: PluginProvider = Object.freeze({
    pluginId,
    name,
    description,
    methods,
    query(method: string, input: JsonValue, call: { callId: string; signal: AbortSignal }) {
      if (!methods.includes(method))
        return Promise.reject(
          new SandboxError('NOT_FOUND', `Provider ${name} of plugin ${pluginId} has no method ${method}.`),
        );
      return executeIn(state, token, { method, input: input ?? null }, call);
    },
  });
  try {
    if (capabilities.provide === undefined) throw new Error('this host takes no inspection providers');
    state.provided.set(token, { name, dispose: capabilities.provide(provider) });
  } catch (error) {
    fail(state, { kind: 'refused', message: clip(`provider ${name}: ${messageOf(error)}`, MAX_ERROR_CHARS) });
  }
}

/** The plugin withdrew a tool (`registered`) or a provider (`provided`) by its token. */
export function withdraw(held: Map<number, Registration>, token: number): void {
  const entry = held.get(token);
  held.delete(token);
  if (entry) safely(entry.dispose);
}
