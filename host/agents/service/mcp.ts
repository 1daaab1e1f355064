// An agent's MCP servers as the service offers them: registered (POST /v1/agents/:id/mcp-servers),
// listed and removed, kept in the agents table (`mcp_servers`) and logged as `agent.mcp_servers`
// (a tool-set event: MCP clients of the agent hear list_changed). Loading an agent installs its
// servers' last listed tools from the record; the servers themselves start at the first call.
// Invariants: the table always holds the list whose tools are in the agent's scope; the log event is
// appended first, so an append the tenant's log budget refuses changes nothing; a deleted agent's
// servers are stopped with its scope (live.ts retire).
import { checkServiceUrl } from '../../egress/settings.ts';
import { SandboxError } from '../../errors.ts';
import type { JsonValue } from '../../json.ts';
import { SERVER_NAME } from '../../mcp-servers/names.ts';
import type { AgentMcp } from '../../mcp-servers/servers.ts';
import {
  DEFAULT_MCP_LIMITS,
  type McpHttpSpec,
  type McpLimits,
  type McpServerRecord,
  type McpServerSpec,
  type McpServerStatus,
} from '../../mcp-servers/types.ts';
import type { AgentRecord, AgentStore } from '../../store/index.ts';
import type { EventLog } from '../../store/types.ts';
import type { Agent } from '../types.ts';
import { deletedError } from './records.ts';

/** The session event a change of an agent's MCP servers appends (one of the tool-set events). */
export const MCP_SERVERS_EVENT = 'agent.mcp_servers';

export function mcpServersOf(record: AgentRecord): McpServerRecord[] {
  return (record.mcpServers ?? []) as unknown as McpServerRecord[];
}

export function mcpLimitsFor(
  limitsOf: ((tenantId: string) => Partial<McpLimits> | undefined) | undefined,
  tenantId: string,
): McpLimits {
  return { ...DEFAULT_MCP_LIMITS, ...limitsOf?.(tenantId) };
}

/** Writes the list (log first, then the table); rejects, changing nothing, when either refuses. */
export function mcpPersister(
  agents: AgentStore,
  events: EventLog,
  agent: Agent,
): (records: McpServerRecord[]) => Promise<void> {
  return async function persist(records) {
    // Secrets stay out of the log: a program's environment and a remote server's headers by name only.
    const servers = records.map(({ tools, ...spec }) => ({
      ...spec,
      ...(spec.transport === 'http'
        ? { headers: spec.headers === undefined ? undefined : Object.keys(spec.headers) }
        : { env: spec.env === undefined ? undefined : Object.keys(spec.env) }),
      tools: tools.map((t) => t.name),
    }));
    await events.append([
      {
        sessionId: agent.sessionId,
        type: MCP_SERVERS_EVENT,
        surface: 'log-only',
        data: { servers: JSON.parse(JSON.stringify(servers)) as JsonValue },
      },
    ]);
    if (!(await agents.setMcpServers(agent.tenantId, agent.id, records as unknown as JsonValue[])))
      throw deletedError(agent.id);
  };
}

export interface McpServerService {
  register(agent: Agent, spec: McpServerSpec): Promise<McpServerStatus>;
  list(agent: Agent): Promise<McpServerStatus[]>;
  get(agent: Agent, name: string): Promise<McpServerStatus>;
  remove(agent: Agent, name: string): Promise<void>;
}

export function createMcpServerService(options: {
  events: EventLog;
  /** The agent's installed MCP servers (loading the agent on first use). */
  mcpOf: (agent: Agent) => Promise<AgentMcp>;
  limitsOf?: (tenantId: string) => Partial<McpLimits> | undefined;
  /** Whether remote (http) servers can be reached (the service has an egress gateway). */
  remote?: boolean;
}): McpServerService {
  const { events } = options;

  function check(agent: Agent, spec: McpServerSpec): McpServerSpec {
    if (!SERVER_NAME.test(spec.name))
      throw new SandboxError(
        'INVALID_ARGUMENTS',
        'An MCP server name is 1-32 letters, digits or "-" (no "_": tool names are mcp__<server>__<tool>).',
      );
    if (spec.transport === 'http') checkRemote(spec);
    const limits = mcpLimitsFor(options.limitsOf, agent.tenantId);
    if (spec.timeoutMs !== undefined && spec.timeoutMs > limits.callTimeoutMs)
      throw new SandboxError(
        'LIMIT_EXCEEDED',
        `timeoutMs ${spec.timeoutMs} is over this tenant's most for an MCP call (${limits.callTimeoutMs} ms).`,
      );
    return spec;
  }

  function checkRemote(spec: McpHttpSpec): void {
    if (!options.remote)
      throw new SandboxError(
        'BAD_REQUEST',
        'This service has no egress gateway, so it reaches no remote MCP server; register a stdio server instead.',
      );
    checkServiceUrl(spec.url, 'url');
    for (const [name, value] of Object.entries(spec.headers ?? {}))
      if (/[\r\n\0]/.test(value) || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/.test(name))
        throw new SandboxError('BAD_REQUEST', `Header ${JSON.stringify(name.slice(0, 80))} cannot be sent.`);
  }

  return {
    async register(agent, spec) {
      const mcp = await options.mcpOf(agent);
      const status = await mcp.put(check(agent, spec));
      await events.flush();
      return status;
    },
    list: async (agent) => (await options.mcpOf(agent)).list(),
    async get(agent, name) {
      const status = (await options.mcpOf(agent)).get(name);
      if (status === undefined)
        throw new SandboxError('NOT_FOUND', `Agent ${agent.id} has no MCP server ${name}.`);
      return status;
    },
    async remove(agent, name) {
      if (!(await (await options.mcpOf(agent)).remove(name)))
        throw new SandboxError('NOT_FOUND', `Agent ${agent.id} has no MCP server ${name}.`);
      await events.flush();
    },
  };
}
