// One agent as an MCP server: a low-level SDK `Server` per HTTP exchange whose tools/list is the
// agent's model-facing set (GET /v1/agents/:id/tools, so code mode lists `run_code` with the
// generated SDK in its description) and whose tools/call is one single-call batch through the
// agent service, exactly like POST /calls: argument validation, policy, `ask` approvals (host
// requests the tenant answers over HTTP), guards and the durable log all happen there, once. The
// low-level Server is a pass-through on purpose: McpServer.registerTool would validate arguments a
// second time, with other wording than the pipeline's INVALID_ARGUMENTS.
// A call stops when the client cancels it: closing its HTTP request (2026-era clients), or a
// 2025-era `notifications/cancelled`, which arrives in a POST of its own and reaches the call
// through InflightCalls (a 2025-era connection that drops does not: its answer is kept for a
// resume, ../routes/mcp.ts gives this server a signal only shutdown aborts). The batch deadline (callTimeoutMs) applies.
// An unknown tool name is a JSON-RPC error (-32602, data.code UNKNOWN_TOOL), not a tool result.
import { randomUUID } from 'node:crypto';
import { type CallToolResult, ProtocolError, ProtocolErrorCode, Server } from '@modelcontextprotocol/server';
import type { AgentService } from '../../agents/service.ts';
import type { Agent } from '../../agents/types.ts';
import { isSandboxError } from '../../errors.ts';
import { followSignal } from '../../follow-signal.ts';
import type { InflightCalls } from './cancels.ts';
import { mcpResult, mcpTool } from './content.ts';

export interface AgentMcpServerOptions {
  agents: AgentService;
  agent: Agent;
  /** The service version, reported as serverInfo.version. */
  version: string;
  inflight: InflightCalls;
  /** The client's Mcp-Session-Id, when it sent one (2025-era clients after initialize). */
  session: string | undefined;
  /** Aborts when the HTTP request that carries this exchange is closed. */
  signal: AbortSignal;
  /** Deadline of one call; it is cancelled after it. */
  callTimeoutMs: number;
}

export function agentMcpServer(options: AgentMcpServerOptions): Server {
  const { agents, agent, inflight, session } = options;
  const server = new Server(
    { name: 'dsh-sandbox', version: options.version },
    {
      capabilities: { tools: { listChanged: true } },
      instructions: `The tools of dsh-sandbox agent ${agent.id} (${agent.preset} preset, ${agent.mode} mode).`,
    },
  );
  const keyOf = (requestId: string | number) => ({
    tenantId: agent.tenantId,
    agentId: agent.id,
    session,
    requestId,
  });

  server.setRequestHandler('tools/list', async () => ({
    tools: (await agents.tools(agent)).tools.map(mcpTool),
  }));

  server.setRequestHandler('tools/call', async (request, ctx): Promise<CallToolResult> => {
    const entry = inflight.begin(keyOf(ctx.mcpReq.id));
    // Ends with the request, the session, a cancel notification or the deadline (followSignal, no
    // composite AbortSignal.any per call: host/follow-signal.ts).
    const follower = followSignal(ctx.mcpReq.signal, options.signal, entry.signal);
    const { signal } = follower;
    const deadline = setTimeout(
      () => follower.controller.abort(new DOMException('The operation timed out.', 'TimeoutError')),
      options.callTimeoutMs,
    );
    try {
      const call = {
        id: `mcp-${randomUUID()}`,
        name: request.params.name,
        arguments: request.params.arguments ?? {},
      };
      const [result] = await agents.call(agent, [call], { signal });
      if (result === undefined) throw new Error('The batch of one call returned no result.');
      // A name the agent has no tool of is the request's fault, not the tool's: JSON-RPC -32602,
      // as MCP's tools spec has it for unknown tools (the log still has the refused call).
      if (result.error?.code === 'UNKNOWN_TOOL')
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, result.error.message, {
          code: 'UNKNOWN_TOOL',
        });
      return mcpResult(result);
    } catch (error) {
      // Refusals before the call ran (the service shutting down, the agent deleted) are results too.
      if (!isSandboxError(error)) throw error;
      const failure = { code: error.code, message: error.message };
      return mcpResult({
        id: '',
        name: request.params.name,
        ok: false,
        content: [],
        error: failure,
        durationMs: 0,
      });
    } finally {
      clearTimeout(deadline);
      follower.release();
      entry.done();
    }
  });

  server.setNotificationHandler('notifications/cancelled', (notification) => {
    const { requestId, reason } = notification.params;
    if (requestId !== undefined) inflight.cancel(keyOf(requestId), reason ?? 'cancelled by the MCP client');
  });
  return server;
}
