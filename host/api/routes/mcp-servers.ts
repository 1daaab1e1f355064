// An agent's MCP servers as tool sources (issue 14): register one (it is started in the agent's
// sandbox, initialized and its tools listed before this answers; the same name replaces it), list
// them with their state and tools, read one, remove one (its program ends, its tools leave the
// agent). Their tools are the agent's `mcp__<server>__<tool>` tools. Another tenant's agent answers
// 404. The program's environment and a remote server's headers are never shown back (they may hold
// tokens): only their names.
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import * as v from 'valibot';
import type { AgentService } from '../../agents/service.ts';
import type { McpServerSpec } from '../../mcp-servers/types.ts';
import { jsonBody, jsonRequest, jsonResponse } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { ErrorBody } from '../schemas.ts';
import { loadAgent } from './agents.ts';

const arg = v.pipe(
  v.string(),
  v.maxLength(8192),
  v.check((s) => !s.includes('\0'), 'no NUL characters'),
);

const serverName = v.pipe(
  v.string(),
  v.regex(/^[A-Za-z0-9-]{1,32}$/, 'a server name is 1-32 letters, digits or "-"'),
);
const callTimeout = v.optional(v.pipe(v.number(), v.integer(), v.minValue(100), v.maxValue(86_400_000)));

/** A remote (Streamable HTTP) server, reached through the egress gateway. */
const RegisterHttpServer = v.strictObject({
  name: serverName,
  transport: v.literal('http'),
  url: v.pipe(v.string(), v.minLength(1), v.maxLength(2048)),
  headers: v.optional(
    v.pipe(
      v.record(v.pipe(v.string(), v.regex(/^[A-Za-z0-9-]{1,128}$/)), v.pipe(v.string(), v.maxLength(8192))),
      v.check((h) => Object.keys(h).length <= 32, 'at most 32 headers'),
    ),
  ),
  timeoutMs: callTimeout,
});

const RegisterStdioServer = v.strictObject({
  name: serverName,
  transport: v.optional(v.literal('stdio'), 'stdio'),
  command: v.pipe(v.array(arg), v.minLength(1), v.maxLength(256)),
  cwd: v.optional(v.pipe(v.string(), v.maxLength(4096))),
  env: v.optional(
    v.pipe(
      v.record(v.pipe(v.string(), v.regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/)), arg),
      v.check((e) => Object.keys(e).length <= 64, 'at most 64 variables'),
      v.description(
        "Extra environment of the program. Stored sealed and shown back by name only; the agent's processes cannot read it in the sandbox (the server runs in a group of its own), but a server whose program lives in the workspace is code the agent can edit.",
      ),
    ),
  ),
  timeoutMs: callTimeout,
});

export const RegisterMcpServer = v.union([RegisterStdioServer, RegisterHttpServer]);

const McpServer = v.object({
  name: v.string(),
  transport: v.picklist(['stdio', 'http']),
  command: v.optional(v.array(v.string())),
  url: v.optional(v.string()),
  headers: v.optional(v.array(v.string())),
  state: v.picklist(['stopped', 'starting', 'ready', 'failed']),
  tools: v.array(v.object({ name: v.string(), tool: v.string() })),
  skipped: v.pipe(
    v.array(v.object({ tool: v.string(), reason: v.string() })),
    v.description("The first 20 of the server's tools the agent does not get, with the reason"),
  ),
  skippedCount: v.pipe(v.number(), v.description("How many of the server's tools the agent does not get")),
  incomplete: v.optional(
    v.pipe(
      v.string(),
      v.description(
        "Why the server's last listing stopped before its last page (a bound of the tenant's: pages, tools, bytes or time); the tools read before it are kept",
      ),
    ),
  ),
  lastError: v.optional(v.string()),
  restarts: v.number(),
});
const McpServerList = v.object({ servers: v.array(McpServer) });

const notFound = { 404: jsonResponse('No such agent or MCP server', ErrorBody) };

export const mcpServerRoutes = (agents: AgentService): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.post(
    '/v1/agents/:id/mcp-servers',
    describeRoute({
      operationId: 'registerMcpServer',
      tags: ['mcp'],
      description:
        "Starts a stdio MCP server in the agent's sandbox (with the agent's uid, so it shares the workspace, but a group of its own, so the agent's processes cannot read its `env`; no network; a program the agent can edit in the workspace can still reveal its env), or connects to a remote one (transport http: Streamable HTTP, reached by the control plane through the egress gateway, only at a URL the tenant's egress allowlist admits, its headers kept by the service and shown back by name only), lists its tools and adds them as mcp__<server>__<tool>; a server of the same name is replaced. MCP_SERVER_FAILED when it does not start or cannot be reached.",
      requestBody: jsonRequest(RegisterMcpServer),
      responses: {
        201: jsonResponse('The server with its tools', McpServer),
        400: jsonResponse('Invalid', ErrorBody),
        502: jsonResponse('The server did not start', ErrorBody),
        ...notFound,
      },
    }),
    loadAgent(agents),
    jsonBody(RegisterMcpServer),
    async (c) => {
      const spec = c.get('body') as McpServerSpec;
      const status = await agents.mcpServers.register(c.get('agent'), spec);
      return c.json(status, 201);
    },
  );
  app.get(
    '/v1/agents/:id/mcp-servers',
    describeRoute({
      operationId: 'listMcpServers',
      tags: ['mcp'],
      responses: { 200: jsonResponse("The agent's MCP servers", McpServerList), ...notFound },
    }),
    loadAgent(agents),
    async (c) => c.json({ servers: await agents.mcpServers.list(c.get('agent')) }),
  );
  app.get(
    '/v1/agents/:id/mcp-servers/:name',
    describeRoute({
      operationId: 'getMcpServer',
      tags: ['mcp'],
      responses: { 200: jsonResponse('The server', McpServer), ...notFound },
    }),
    loadAgent(agents),
    async (c) => c.json(await agents.mcpServers.get(c.get('agent'), c.req.param('name'))),
  );
  app.delete(
    '/v1/agents/:id/mcp-servers/:name',
    describeRoute({
      operationId: 'removeMcpServer',
      tags: ['mcp'],
      description: 'Ends the server and removes its tools from the agent.',
      responses: { 204: { description: 'Removed' }, ...notFound },
    }),
    loadAgent(agents),
    async (c) => {
      await agents.mcpServers.remove(c.get('agent'), c.req.param('name'));
      return c.body(null, 204);
    },
  );
  return app;
};
