// One agent's MCP servers: a runner per registered server and its tools in the agent's own scope.
// Installed from the stored records when the agent is loaded (the tools each server listed last, so
// nothing starts until a call needs it); `put` starts a server, lists its tools and only then
// replaces the one of that name; `remove` and `stopAll` end them. A server that lists other tools
// when it starts again (after a crash or a restart of the service) has its tools replaced and the
// new records persisted.
// This module wires the parts: servers-state.ts (the entries, a runner made, a status, a swap of
// tools) and servers-change.ts (put, remove).
// Invariants: the scope holds exactly the tools of the current runners; a registration that fails
// (the server does not start, its tools cannot be registered, persisting fails) leaves the previous
// server of that name and its tools as they were; `persist` always gets the whole list.
import { put, remove } from './servers-change.ts';
import {
  type AgentMcp,
  type AgentMcpOptions,
  register,
  runnerFor,
  type ServersState,
  statusOf,
} from './servers-state.ts';
import { defineMcpTools } from './tools.ts';
import type { McpServerRecord } from './types.ts';

export type { AgentMcp, AgentMcpOptions } from './servers-state.ts';

export function installMcpServers(options: AgentMcpOptions, records: readonly McpServerRecord[]): AgentMcp {
  const { tools, limits } = options;
  const s: ServersState = { options, tools, limits, entries: new Map() };
  const { entries } = s;

  // Loaded from the store: the tools are known, the servers start at their first call.
  for (const record of records) {
    const runner = runnerFor(s, record);
    const defs = defineMcpTools(runner, record.tools);
    entries.set(record.name, { record, runner, defs, disposers: register(s, defs) });
  }

  function stopAll(): void {
    for (const e of entries.values()) e.runner.stop();
  }

  return {
    list: () => [...entries.values()].map(statusOf),
    get: (name) => {
      const e = entries.get(name);
      return e === undefined ? undefined : statusOf(e);
    },
    put: (spec) => put(s, spec),
    remove: (name) => remove(s, name),
    stopAll,
  };
}
