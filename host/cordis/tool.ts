// A tool a running plugin registered, as the agent's registry holds it: an ordinary JSON Schema
// tool (validated by the validator remote tools use, every `pattern` on the linear-time engine),
// whose body runs the plugin's `execute` in its isolate. While a call runs, its ExecContext is kept
// by an id the plugin sees as `exec.callId`, so the tool calls the plugin makes inside it re-enter
// the pipeline as inner calls of that call (calls.ts). Invariant: an id is held only while its call
// runs, and two calls in flight never share one.

import type { PluginTool } from '../plugins/index.ts';
import { defineJsonSchemaTool } from '../tools/json-schema-tool.ts';
import { validationSchemaOf, withClientSchema } from '../tools/safe-schema.ts';
import type { ExecContext, JsonValue, ToolDefinition } from '../tools/types.ts';

/** The ExecContexts of plugin tool calls in flight, by the id their plugin was given. */
export interface RunningCalls {
  get(id: string): ExecContext | undefined;
  /** Keeps `exec` under a fresh id (its callId when free) until the returned release runs. */
  hold(exec: ExecContext): { id: string; release(): void };
}

export const createRunningCalls = (): RunningCalls => {
  const running = new Map<string, ExecContext>();
  let seq = 0;
  return {
    get: (id) => running.get(id),
    hold(exec) {
      // Clients choose root call ids, so two batches may both run a call "c1" at once.
      const id = running.has(exec.callId) ? `${exec.callId}#${++seq}` : exec.callId;
      running.set(id, exec);
      return { id, release: () => running.delete(id) };
    },
  };
};

/** Throws CONFIG_INVALID or INVALID_ARGUMENTS for a schema the validator cannot take. */
export const pluginToolDefinition = (tool: PluginTool, calls: RunningCalls): ToolDefinition => {
  const definition = defineJsonSchemaTool({
    name: tool.name,
    description: tool.description,
    parameters: validationSchemaOf(tool.parameters, `plugin tool ${tool.name}`),
    isConcurrencySafe: () => tool.concurrencySafe,
    async execute(args, exec) {
      const held = calls.hold(exec);
      try {
        return await tool.execute(args as JsonValue, { callId: held.id, signal: exec.signal });
      } finally {
        held.release();
      }
    },
  });
  return withClientSchema(definition, tool.parameters);
};
