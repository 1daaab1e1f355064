// When an agent's tool set changes, as MCP hears of it: the agent's durable log is the source (a
// registration of remote tools appends `agent.remote_tools` after the new tools are in the agent's
// scope, a creator plugin's registrations `tools.change`), so whoever listens learns of a change
// that any request of this process made, in the order the log has it. The agent's MCP servers
// (tool sources) log `agent.mcp_servers` when they are registered, removed or list other tools.
// Invariant: a listener is called after the new set is visible to tools/list.
import type { Agent } from '../../agents/types.ts';
import type { EventLog } from '../../store/types.ts';

/** Session event types that mean "the model-facing tool set may differ now". */
export const TOOL_SET_EVENTS: ReadonlySet<string> = new Set([
  'agent.remote_tools',
  'tools.change',
  'agent.mcp_servers',
]);

/** Calls `listener` on each change of the agent's tool set; returns the unsubscriber. */
export function onToolsChanged(events: EventLog, agent: Agent, listener: () => void): () => void {
  return events.subscribe(agent.sessionId, (event) => {
    if (TOOL_SET_EVENTS.has(event.type)) listener();
  });
}
