// WebSocket `/v1/agents/:id/terminals/:tid`: a person attached to one of the agent's terminals.
// Auth: `Authorization: Bearer <key>`, or (browsers cannot set headers on a WebSocket) a `token`
// query parameter, or a `bearer.<key>` entry in Sec-WebSocket-Protocol next to `dsh.terminal.v1`
// (the protocol the server selects; a key is never echoed back).
// Frames: binary both ways (terminal bytes); a text frame holding a JSON control message
// ({"type":"resize","cols","rows"} or {"type":"signal","signal"}) is a control, any other text is
// input. On attach the buffered output is replayed (from `?offset=N` when given), then output
// streams live; the socket closes 1000 when the terminal ends, 1011 when the sandbox connection is
// lost, 1013 when the client reads too slowly, 1000 `agent deleted` when its agent is deleted.
// Every check happens before the upgrade, so another tenant's agent or an unknown terminal is a
// plain 404.
// Bounds (issue 11): a tenant's socket slot is taken synchronously when the upgrade request
// arrives, before any await, and given back when its TCP socket closes (so N concurrent attempts
// can never exceed the cap); input is bounded per socket: above INPUT_HIGH bytes waiting for the
// sandbox the socket is paused (TCP pushes back on the client) and resumed below INPUT_LOW; a
// frame over MAX_WS_PAYLOAD closes it 1009; pending input over INPUT_LIMIT (a client that got
// past the pause) closes it 1008.// This module mounts the route; its parts: terminal-wire.ts (subprotocol, key, controls, bounds),
// terminal-upgrade.ts (slot, lookup, the socket's events), terminal-socket.ts (one socket's slot
// hold, input queue and output).

import { upgradeWebSocket } from '@hono/node-server';
import { Hono, type MiddlewareHandler } from 'hono';
import { describeRoute } from 'hono-openapi';
import type { AgentService } from '../../agents/service.ts';
import type { TenantStore } from '../../store/index.ts';
import { tenantOfKey } from '../auth.ts';
import { jsonResponse } from '../body.ts';
import { type ConnectionGuard, claimConnection } from '../connections.ts';
import type { ApiEnv } from '../env.ts';
import { createTenantLimiter } from '../limits.ts';
import type { Metrics } from '../metrics.ts';
import { ErrorBody } from '../schemas.ts';
import { loadAgent } from './agents.ts';
import { type TerminalRoutesState, upgradeTerminal } from './terminal-upgrade.ts';
import { tokenOf } from './terminal-wire.ts';

export {
  createWebSocketServer,
  INPUT_HIGH,
  INPUT_LIMIT,
  MAX_WS_PAYLOAD,
  TERMINAL_PROTOCOL,
} from './terminal-wire.ts';

export interface TerminalRouteOptions {
  /** Open terminal sockets per tenant. Default 32. */
  maxSocketsPerTenant?: number;
  /** Where the sockets' gauges go (open sockets, input waiting for sandboxes). Default: nowhere. */
  metrics?: Metrics;
  /** The server's connection admission: an authenticated upgrade claims its connection. */
  connections?: ConnectionGuard;
  /** Sends an upgrade for another replica's agent there, after its key is checked (../forward/route.ts). */
  forward?: MiddlewareHandler<ApiEnv>;
  /** Called on each frame from the client and each chunk of output sent to it (idle polling: ../../idle-poll.ts). Default: nothing. */
  activity?: () => void;
}

/** The terminal socket in /openapi.json: a GET that switches protocols (101) to a WebSocket. */
const TERMINAL_SOCKET = {
  operationId: 'attachTerminal',
  tags: ['terminals'],
  summary: "Attach to one of the agent's terminals (WebSocket)",
  description:
    'A WebSocket upgrade (`Connection: Upgrade`, `Upgrade: websocket`). Auth: `Authorization: Bearer <key>`, or a `token` query parameter, or a `bearer.<key>` entry in Sec-WebSocket-Protocol next to `dsh.terminal.v1` (browsers cannot set headers on a WebSocket). Frames: binary both ways (terminal bytes); a text frame holding `{"type":"resize","cols","rows"}` or `{"type":"signal","signal"}` is a control, any other text is input. The buffered output is replayed first (from `offset`), then output streams live. Close codes: 1000 the terminal ended (or `agent deleted`), 1008 input too fast, 1009 a frame too large, 1011 the sandbox connection was lost, 1013 the client reads too slowly. Every check happens before the upgrade: a refusal is a plain JSON error.',
  parameters: [
    { name: 'tid', in: 'path' as const, required: true, schema: { type: 'string' as const } },
    {
      name: 'offset',
      in: 'query' as const,
      schema: { type: 'integer' as const, minimum: 0 },
      description: 'Replay the buffered output from this byte offset',
    },
    {
      name: 'token',
      in: 'query' as const,
      schema: { type: 'string' as const },
      description: 'The API key, for clients that cannot send the Authorization header',
    },
  ],
  responses: {
    101: {
      description: 'Switching Protocols: the WebSocket is open (subprotocol dsh.terminal.v1 when asked for)',
    },
    400: jsonResponse('Not a WebSocket upgrade', ErrorBody),
    401: jsonResponse('No API key, or an unknown or revoked one', ErrorBody),
    404: jsonResponse('No such agent or terminal for this tenant', ErrorBody),
    429: jsonResponse('The tenant has its most terminal sockets open; close one', ErrorBody),
  },
  'x-websocket': {
    subprotocol: 'dsh.terminal.v1',
    frames: 'binary: terminal bytes; text: JSON control or input',
  },
};

export const terminalRoutes = (
  agents: AgentService,
  tenants: TenantStore,
  options: TerminalRouteOptions = {},
): Hono<ApiEnv> => {
  const maxSockets = options.maxSocketsPerTenant ?? 32;
  const state: TerminalRoutesState = {
    agents,
    maxSockets,
    sockets: createTenantLimiter(maxSockets),
    activity: options.activity ?? (() => {}),
    open: 0,
    inputPending: 0,
    inputPendingMax: 0,
  };
  options.metrics?.gauge(
    'dsh_terminal_sockets_open',
    'Terminal WebSockets open (or upgrading).',
    () => state.open,
  );
  options.metrics?.gauge(
    'dsh_terminal_input_pending_bytes',
    'Terminal input received from clients and not yet written to a sandbox.',
    () => state.inputPending,
  );
  options.metrics?.gauge(
    'dsh_terminal_input_pending_bytes_max',
    'The most terminal input ever waiting for sandboxes at once since start.',
    () => state.inputPendingMax,
  );
  const app = new Hono<ApiEnv>();

  app.get(
    '/v1/agents/:id/terminals/:tid',
    describeRoute(TERMINAL_SOCKET),
    async function terminalAuth(c, next) {
      const token = tokenOf(
        c.req.header('authorization'),
        c.req.query('token'),
        c.req.header('sec-websocket-protocol'),
      );
      const tenant = await tenantOfKey(c, tenants, token);
      claimConnection(options.connections, c, tenant.id);
      c.set('tenant', tenant);
      c.set('keyLive', async () => (await tenants.verifyKey(token)) !== undefined);
      await next();
    },
    async function terminalRoute(c, next) {
      return options.forward === undefined ? next() : options.forward(c, next);
    },
    loadAgent(agents),
    upgradeWebSocket((c) => upgradeTerminal(state, c)),
  );
  return app;
};
