// Remote tools of one agent: installed in its tool scope from its stored record, and replaced by
// registrations (POST /v1/agents/:id/remote-tools), which the agents table keeps and the log records.
// Invariants: the scope holds exactly the list last stored for the agent; a registration is all or
// nothing (a spec the scope refuses, a log append its tenant's budget refuses, or an agent deleted
// meanwhile leaves the old tools in place); a replaced name moves to the end of the list; an agent
// holds at most MAX_REMOTE_TOOLS (a registration past it is LIMIT_EXCEEDED, checked with the swap,
// so concurrent ones cannot pass it together).
import { messageOf, SandboxError } from '../../errors.ts';
import type { JsonValue } from '../../json.ts';
import type { RequestStore } from '../../requests/index.ts';
import type { AgentStore } from '../../store/index.ts';
import type { EventLog } from '../../store/types.ts';
import type { Disposer } from '../../tools/disposer.ts';
import type { ToolDefinition } from '../../tools/types.ts';
import { defineRemoteTool, MAX_REMOTE_TOOLS } from '../remote-tools.ts';
import type { Agent, AgentTools, RemoteToolSpec } from '../types.ts';
import { deletedError } from './records.ts';

export type DefineRemote = (spec: RemoteToolSpec) => ToolDefinition;

/** defineRemoteTool over the store's requests; a bad spec is the client's mistake (INVALID_ARGUMENTS). */
export function remoteDefiner(requests: RequestStore, now?: () => number): DefineRemote {
  return function defineRemote(spec) {
    try {
      return defineRemoteTool(spec, requests, now);
    } catch (error) {
      throw new SandboxError('INVALID_ARGUMENTS', `Remote tool ${spec.name}: ${messageOf(error)}`, {
        cause: error,
      });
    }
  };
}

/** The list a sequence of registrations leaves: the last spec of each name, at its last place. */
export function latestByName(specs: readonly RemoteToolSpec[]): RemoteToolSpec[] {
  const byName = new Map<string, RemoteToolSpec>();
  for (const spec of specs) {
    byName.delete(spec.name);
    byName.set(spec.name, spec);
  }
  return [...byName.values()];
}

export interface RemoteTools {
  has(name: string): boolean;
  /**
   * Adds or replaces `specs` by name; `persist` gets the whole new list and may reject, which puts
   * the old tools back. Resolves to every remote tool name.
   */
  replace(
    specs: readonly RemoteToolSpec[],
    persist: (all: RemoteToolSpec[]) => Promise<void>,
  ): Promise<string[]>;
}

interface Entry {
  spec: RemoteToolSpec;
  definition: ToolDefinition;
  dispose: Disposer;
}

/** Registers `specs` in the agent's tools; throws, having left none registered, when one is refused. */
export function installRemoteTools(
  tools: AgentTools,
  specs: readonly RemoteToolSpec[],
  define: DefineRemote,
): RemoteTools {
  const entries = new Map<string, Entry>();

  function put(spec: RemoteToolSpec, definition: ToolDefinition): void {
    entries.get(spec.name)?.dispose();
    entries.delete(spec.name);
    entries.set(spec.name, { spec, definition, dispose: tools.register(definition) });
  }

  function restore(previous: readonly Entry[]): void {
    for (const entry of entries.values()) entry.dispose();
    entries.clear();
    for (const { spec, definition } of previous) put(spec, definition);
  }

  /** LIMIT_EXCEEDED when `specs` would leave more than MAX_REMOTE_TOOLS (each registration adds to the list). */
  function checkRoom(specs: readonly RemoteToolSpec[]): void {
    const added = specs.filter((spec) => !entries.has(spec.name)).length;
    if (entries.size + added > MAX_REMOTE_TOOLS)
      throw new SandboxError(
        'LIMIT_EXCEEDED',
        `This agent has ${entries.size} remote tools and this registration adds ${added}; it may hold ${MAX_REMOTE_TOOLS}. Re-register existing names to replace them.`,
        { data: { limit: 'remoteTools', max: MAX_REMOTE_TOOLS } },
      );
  }

  /** Puts `specs` in place of their namesakes; returns what was there before (restore() takes it). */
  function swap(specs: readonly RemoteToolSpec[]): Entry[] {
    const definitions = specs.map((spec) => ({ spec, definition: define(spec) }));
    const previous = [...entries.values()];
    try {
      for (const { spec, definition } of definitions) put(spec, definition);
    } catch (error) {
      restore(previous);
      throw error;
    }
    return previous;
  }

  async function replace(
    specs: readonly RemoteToolSpec[],
    persist: (all: RemoteToolSpec[]) => Promise<void>,
  ): Promise<string[]> {
    checkRoom(specs);
    const previous = swap(specs);
    try {
      await persist([...entries.values()].map((entry) => entry.spec));
    } catch (error) {
      restore(previous);
      throw error;
    }
    return [...entries.keys()];
  }

  swap(specs); // the stored ones: nothing to persist
  return { has: (name) => entries.has(name), replace };
}

export interface RemoteRegistrationOptions {
  agents: AgentStore;
  events: EventLog;
  /** The agent's installed remote tools (loading the agent on first use). */
  remoteOf: (agent: Agent) => Promise<RemoteTools>;
}

/** AgentService.registerRemoteTools. */
export function createRemoteRegistration(
  options: RemoteRegistrationOptions,
): (agent: Agent, tools: RemoteToolSpec[]) => Promise<string[]> {
  const { agents, events } = options;

  async function persist(agent: Agent, all: RemoteToolSpec[]): Promise<void> {
    const tools = all as unknown as JsonValue[];
    // Logged first: an append the tenant's log budget refuses leaves the table as it was.
    await events.append([
      { sessionId: agent.sessionId, type: 'agent.remote_tools', surface: 'log-only', data: { tools } },
    ]);
    if (!(await agents.setRemoteTools(agent.tenantId, agent.id, tools))) throw deletedError(agent.id);
  }

  return async function registerRemoteTools(agent, tools) {
    const remote = await options.remoteOf(agent);
    const names = new Set<string>();
    for (const spec of tools) {
      if (names.has(spec.name))
        throw new SandboxError('INVALID_ARGUMENTS', `Remote tool ${spec.name} is listed twice.`);
      names.add(spec.name);
    }
    const all = await remote.replace(tools, (specs) => persist(agent, specs));
    await events.flush();
    return all;
  };
}
