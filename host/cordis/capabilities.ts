// What one running plugin may do outside its isolate (PluginCapabilities), bound to its agent:
// register tools into the agent's own scope, call the agent's visible tools as the agent through
// the pipeline, and observe the agent's tool events. Invariants: a plugin tool never takes a name
// the agent inherits (built-in) unless the agent's policy lists it in `pluginShadows` (then the
// policy written for that name governs the plugin's tool), a remote tool's, or another plugin's
// (TOOL_NAME_TAKEN), so no policy written for `bash` or `read` can be dodged by impersonation; every call a plugin makes is
// logged with the plugin as provenance (inside one of its tool calls as an inner call of it,
// otherwise log-only on its own); a plugin never calls cordis_* tools (DENIED); its inspection
// providers join the agent's and never take a host provider's id or another plugin's
// (TOOL_NAME_TAKEN, the one code for a name a plugin may not take); it reaches only the agent it
// was started for.

import type { LiveAgent } from '../agents/service/live.ts';
import type { Agent } from '../agents/types.ts';
import { SandboxError } from '../errors.ts';
import type {
  HostEventName,
  JsonValue,
  PluginCapabilities,
  PluginProvider,
  PluginTool,
} from '../plugins/index.ts';
import type { EventLog } from '../store/types.ts';
import type { CallProvenance, ToolResult } from '../tools/types.ts';
import { pluginToolDefinition, type RunningCalls } from './tool.ts';

/** Plugin tool names of one agent, by the plugin that holds each (a name is held by one plugin). */
export type ToolOwners = Map<string, string>;
/** Inspection providers plugins of one agent provide, by provider id. */
export type AgentProviders = Map<string, PluginProvider>;

export interface CapabilityOptions {
  agent: Agent;
  pluginId: string;
  /** The agent's loaded tools (NOT_FOUND once it is gone). */
  live: () => LiveAgent;
  /** The agent's plugin tool names and their plugins. */
  owners: ToolOwners;
  providers: AgentProviders;
  /** Provider ids the host itself has (a plugin may not take them). */
  hostProviders: readonly string[];
  calls: RunningCalls;
  events: EventLog;
  /** Told when a tool of this plugin comes or goes. */
  changed(change: { added?: string; removed?: string }): void;
  /** Told the stable code of a registration refused (what cordis_run reports). */
  refused(code: SandboxError['code']): void;
}

const taken = (name: string, what: string): SandboxError =>
  new SandboxError(
    'TOOL_NAME_TAKEN',
    `TOOL_NAME_TAKEN: ${name} is ${what}; a plugin may not shadow it. Register the tool under another name.`,
    { data: { name } },
  );

export const outcomeOf = (result: ToolResult | undefined): JsonValue => {
  if (result === undefined) throw new SandboxError('INTERNAL', 'The call settled with no result.');
  if (!result.ok) {
    const error = result.error ?? { code: 'TOOL_FAILED' as const, message: 'the call failed' };
    throw new SandboxError(error.code, error.message);
  }
  return result.value ?? null;
};

export function pluginCapabilities(options: CapabilityOptions): PluginCapabilities {
  const { agent, pluginId, owners } = options;
  const provenance: CallProvenance = { kind: 'plugin', pluginId };
  let seq = 0;

  function check(tool: PluginTool): void {
    const live = options.live();
    const shadowable = options.agent.config.policy?.pluginShadows ?? [];
    if (live.tools.inherits(tool.name) && !shadowable.includes(tool.name))
      throw taken(tool.name, "a built-in tool (the agent's policy may list it in pluginShadows)");
    if (live.remote.has(tool.name)) throw taken(tool.name, "one of the agent's remote tools");
    const owner = owners.get(tool.name);
    if (owner !== undefined)
      throw taken(tool.name, owner === pluginId ? 'already registered' : `plugin ${owner}'s tool`);
  }

  return {
    registerTool(tool) {
      let dispose: () => void;
      try {
        check(tool);
        dispose = options.live().tools.register(pluginToolDefinition(tool, options.calls));
      } catch (error) {
        if (error instanceof SandboxError) options.refused(error.code);
        throw error;
      }
      owners.set(tool.name, pluginId);
      options.changed({ added: tool.name });
      let done = false;
      return () => {
        if (done) return;
        done = true;
        dispose();
        if (owners.get(tool.name) === pluginId) owners.delete(tool.name);
        options.changed({ removed: tool.name });
      };
    },

    provide(provider) {
      const { providers } = options;
      const holder = providers.get(provider.name)?.pluginId;
      const what = options.hostProviders.includes(provider.name)
        ? 'a host provider'
        : holder === undefined
          ? undefined
          : holder === pluginId
            ? 'already provided'
            : `plugin ${holder}'s provider`;
      if (what !== undefined) {
        const error = new SandboxError(
          'TOOL_NAME_TAKEN',
          `TOOL_NAME_TAKEN: inspection provider ${provider.name} is ${what}; provide it under another name.`,
          { data: { name: provider.name } },
        );
        options.refused(error.code);
        throw error;
      }
      providers.set(provider.name, provider);
      return () => {
        if (providers.get(provider.name) === provider) providers.delete(provider.name);
      };
    },

    async callTool(request, signal) {
      if (request.name.startsWith('cordis_'))
        throw new SandboxError('DENIED', `A plugin may not call ${request.name}.`);
      const parent = request.parentCallId === undefined ? undefined : options.calls.get(request.parentCallId);
      if (parent !== undefined)
        return outcomeOf(await parent.callTool(request.name, request.args, { signal, provenance }));
      const call = { id: `plugin:${pluginId}:${++seq}`, name: request.name, arguments: request.args };
      return outcomeOf((await options.live().tools.execute([call], signal, provenance))[0]);
    },

    subscribe(listener: (name: HostEventName, data: JsonValue) => void) {
      return options.events.subscribe(agent.sessionId, (event) => {
        const data = event.data as { [key: string]: JsonValue };
        if (event.type === 'tools.change') listener('tools/change', event.data);
        else if (event.type === 'tool.result') {
          const error = data.error as { code?: JsonValue } | undefined;
          listener('tools/result', {
            callId: event.callId ?? null,
            name: data.name ?? null,
            ok: data.ok ?? null,
            ...(error?.code === undefined ? {} : { code: error.code }),
          });
        }
      });
    },
  };
}
