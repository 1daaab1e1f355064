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
// past the pause) closes it 1008.

import type { IncomingMessage } from 'node:http';
import { upgradeWebSocket } from '@hono/node-server';
import { Hono } from 'hono';
import type { WSContext } from 'hono/ws';
import { describeRoute } from 'hono-openapi';
import { WebSocketServer } from 'ws';
import type { AgentService } from '../../agents/service.ts';
import { isSandboxError, SandboxError } from '../../errors.ts';
import type { SandboxTerminals, TerminalSignal } from '../../sandbox/types.ts';
import type { TenantStore } from '../../store/index.ts';
import { bearerToken, tenantOfKey } from '../auth.ts';
import { jsonResponse } from '../body.ts';
import { type ConnectionGuard, claimConnection } from '../connections.ts';
import type { ApiEnv } from '../env.ts';
import { createTenantLimiter } from '../limits.ts';
import type { Metrics } from '../metrics.ts';
import { ErrorBody } from '../schemas.ts';
import { loadAgent } from './agents.ts';

export const TERMINAL_PROTOCOL = 'dsh.terminal.v1';
const BEARER_PROTOCOL = 'bearer.';
/** Largest frame a client may send (keystrokes and pastes). */
export const MAX_WS_PAYLOAD = 256 * 1024;
/**
 * Output queued for a client beyond which it is disconnected (1013) rather than buffered: the
 * terminal's own replay window (1 MiB), since a client that reconnects with ?offset= can resume from
 * no further back anyway. At 8 MiB, 32 paused readers of one `yes` grew the server by 190 MB.
 */
const MAX_BUFFERED = 1024 * 1024;
/** Input waiting for the sandbox above which the socket stops reading, and below which it resumes. */
export const INPUT_HIGH = 1024 * 1024;
const INPUT_LOW = 256 * 1024;
/** Input waiting for the sandbox beyond which the socket is closed (1008). */
export const INPUT_LIMIT = 4 * 1024 * 1024;
/** What one queued frame costs beyond its bytes, so that floods of empty frames are bounded too. */
const FRAME_COST = 64;
/** How long input waits for a terminal whose program stopped reading before the socket closes. */
const STALLED_MS = 30_000;

/**
 * Writes input, waiting while the sandbox says the terminal's own input queue is full
 * (LIMIT_EXCEEDED): that wait is what keeps this socket's queue growing, and so paused.
 */
const writeWhenReady = async (
  terms: SandboxTerminals,
  tid: string,
  data: string | Uint8Array,
  stop: AbortSignal,
): Promise<void> => {
  for (let delay = 10, waited = 0; ; delay = Math.min(delay * 2, 500)) {
    try {
      return await terms.write(tid, data);
    } catch (error) {
      if (!(isSandboxError(error) && error.code === 'LIMIT_EXCEEDED') || stop.aborted) throw error;
      if (waited >= STALLED_MS) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
    waited += delay;
  }
};
const SIGNALS: TerminalSignal[] = ['SIGINT', 'SIGTERM', 'SIGKILL', 'SIGTSTP', 'SIGHUP', 'SIGQUIT', 'SIGCONT'];

/**
 * The ws server behind @hono/node-server's upgradeWebSocket (serve.ts passes it as
 * `websocket.server`): noServer, a payload cap, and the subprotocol choice that keeps keys private.
 */
export const createWebSocketServer = (options: { maxPayload?: number } = {}): WebSocketServer =>
  new WebSocketServer({
    noServer: true,
    maxPayload: options.maxPayload ?? MAX_WS_PAYLOAD,
    handleProtocols: (protocols) => (protocols.has(TERMINAL_PROTOCOL) ? TERMINAL_PROTOCOL : false),
  });

const tokenOf = (header: string | undefined, query: string | undefined, protocols: string | undefined) => {
  if (header !== undefined) return bearerToken(header);
  if (query) return query;
  const offered = (protocols ?? '').split(',').map((p) => p.trim());
  const bearer = offered.find((p) => p.startsWith(BEARER_PROTOCOL));
  if (bearer) return bearer.slice(BEARER_PROTOCOL.length);
  return bearerToken(undefined); // throws the 401 with its challenge
};

type Control = { type: 'resize'; cols: number; rows: number } | { type: 'signal'; signal: TerminalSignal };
const controlOf = (text: string): Control | undefined => {
  if (!text.startsWith('{')) return undefined;
  try {
    const m = JSON.parse(text) as Record<string, unknown>;
    if (m.type === 'resize' && Number.isInteger(m.cols) && Number.isInteger(m.rows))
      return { type: 'resize', cols: m.cols as number, rows: m.rows as number };
    if (m.type === 'signal' && SIGNALS.includes(m.signal as TerminalSignal))
      return { type: 'signal', signal: m.signal as TerminalSignal };
  } catch {
    // not JSON: plain input
  }
  return undefined;
};

export interface TerminalRouteOptions {
  /** Open terminal sockets per tenant. Default 32. */
  maxSocketsPerTenant?: number;
  /** Where the sockets' gauges go (open sockets, input waiting for sandboxes). Default: nowhere. */
  metrics?: Metrics;
  /** The server's connection admission: an authenticated upgrade claims its connection. */
  connections?: ConnectionGuard;
}

/** The raw ws socket behind hono's WSContext (pause/resume are ws 8 methods). */
interface RawSocket {
  bufferedAmount?: number;
  pause?: () => void;
  resume?: () => void;
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
  const sockets = createTenantLimiter(maxSockets);
  let open = 0;
  let inputPending = 0;
  let inputPendingMax = 0;
  options.metrics?.gauge('dsh_terminal_sockets_open', 'Terminal WebSockets open (or upgrading).', () => open);
  options.metrics?.gauge(
    'dsh_terminal_input_pending_bytes',
    'Terminal input received from clients and not yet written to a sandbox.',
    () => inputPending,
  );
  options.metrics?.gauge(
    'dsh_terminal_input_pending_bytes_max',
    'The most terminal input ever waiting for sandboxes at once since start.',
    () => inputPendingMax,
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
      const tenant = tenantOfKey(c, tenants, token);
      claimConnection(options.connections, c, tenant.id);
      c.set('tenant', tenant);
      await next();
    },
    loadAgent(agents),
    upgradeWebSocket(async (c) => {
      if (c.req.header('upgrade')?.toLowerCase() !== 'websocket')
        throw new SandboxError('BAD_REQUEST', 'Connect to a terminal with a WebSocket (Upgrade: websocket).');
      const tenantId = c.get('tenant').id;
      const agent = c.get('agent');
      const tid = c.req.param('tid') ?? '';
      // The slot is taken here, synchronously, and held until the connection is gone: checking
      // after the awaits below would let every concurrent attempt pass the same check.
      const slot = sockets.tryAcquire(tenantId);
      if (slot === undefined)
        throw new SandboxError(
          'RATE_LIMITED',
          `At most ${maxSockets} terminal sockets per tenant; close one.`,
          {
            data: { retryAfterS: 5 },
          },
        );
      open++;
      let released = false;
      const detach = new AbortController();
      let ws: WSContext | undefined;
      let stopWatching = (): void => {};
      const release = (): void => {
        detach.abort();
        stopWatching();
        if (released) return;
        released = true;
        open--;
        slot();
      };
      // The connection's own end releases too: an upgrade whose handshake never completes gets
      // neither onOpen nor onClose.
      const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
      incoming?.socket.once('close', release);
      let terms: SandboxTerminals | undefined;
      try {
        const sandbox = await agents.sandbox(agent);
        terms = sandbox.terminals;
        const found =
          terms && /^[A-Za-z0-9_-]{1,64}$/.test(tid)
            ? (await terms.list()).find((t) => t.id === tid)
            : undefined;
        if (!found) throw new SandboxError('NOT_FOUND', `No terminal ${JSON.stringify(tid.slice(0, 80))}.`);
      } catch (error) {
        incoming?.socket.off('close', release);
        release();
        throw error;
      }
      const terminal = terms as SandboxTerminals;
      const rawOffset = Number(c.req.query('offset'));
      const offset = Number.isSafeInteger(rawOffset) && rawOffset >= 0 ? rawOffset : undefined;
      const closeWith = (socket: WSContext | undefined, code: number, reason: string): void => {
        if (socket && (socket.readyState === 0 || socket.readyState === 1))
          socket.close(code, reason.slice(0, 120));
      };
      let deleted = false;
      stopWatching = agents.onDeleted(agent, () => {
        deleted = true;
        closeWith(ws, 1000, 'agent deleted');
        release();
      });

      // Input and controls run one after another, in arrival order; `pending` bytes wait.
      let input = Promise.resolve();
      let pending = 0;
      let paused = false;
      const enqueue = (socket: WSContext, bytes: number, work: () => Promise<unknown>): void => {
        if (released) return;
        const cost = bytes + FRAME_COST;
        if (pending + cost > INPUT_LIMIT) {
          closeWith(socket, 1008, 'terminal input too fast');
          release();
          return;
        }
        pending += cost;
        inputPending += cost;
        inputPendingMax = Math.max(inputPendingMax, inputPending);
        const raw = socket.raw as RawSocket | undefined;
        if (pending > INPUT_HIGH && !paused && raw?.pause) {
          paused = true;
          raw.pause();
        }
        input = input
          .then(() => (released ? undefined : work()))
          .then(
            () => undefined,
            (e: unknown) => {
              if (isSandboxError(e) && e.code === 'CONFLICT') closeWith(socket, 1000, 'terminal exited');
              else if (isSandboxError(e) && e.code === 'LIMIT_EXCEEDED')
                closeWith(socket, 1008, 'the terminal stopped reading its input');
              else if (!(isSandboxError(e) && e.code === 'INVALID_ARGUMENTS'))
                closeWith(socket, 1011, 'sandbox connection lost');
            },
          )
          .finally(() => {
            pending -= cost;
            inputPending -= cost;
            if (paused && pending <= INPUT_LOW) {
              paused = false;
              raw?.resume?.();
            }
          });
      };
      return {
        onOpen(_event, socket) {
          ws = socket;
          if (deleted || released) {
            closeWith(socket, 1000, deleted ? 'agent deleted' : 'closed');
            return;
          }
          terminal
            .attach(tid, {
              ...(offset === undefined ? {} : { offset }),
              signal: detach.signal,
              onData: (data) => {
                const raw = socket.raw as RawSocket | undefined;
                if ((raw?.bufferedAmount ?? 0) > MAX_BUFFERED) {
                  detach.abort();
                  closeWith(socket, 1013, 'client too slow; reconnect with ?offset= to resume');
                  return;
                }
                if (socket.readyState === 1) socket.send(new Uint8Array(data));
              },
            })
            .then(
              (info) => {
                if (info.status === 'exited')
                  closeWith(
                    socket,
                    1000,
                    `terminal exited${info.exitCode === null ? '' : ` (${info.exitCode})`}`,
                  );
              },
              () => closeWith(socket, 1011, 'sandbox connection lost'),
            );
        },
        onMessage(event, socket) {
          const data = event.data;
          if (typeof data === 'string') {
            const control = controlOf(data);
            const bytes = Buffer.byteLength(data);
            if (control?.type === 'resize')
              enqueue(socket, bytes, () => terminal.resize(tid, control.cols, control.rows));
            else if (control?.type === 'signal')
              enqueue(socket, bytes, () => terminal.signal(tid, control.signal));
            else enqueue(socket, bytes, () => writeWhenReady(terminal, tid, data, detach.signal));
          } else if (data instanceof ArrayBuffer) {
            const bytes = new Uint8Array(data);
            enqueue(socket, bytes.byteLength, () => writeWhenReady(terminal, tid, bytes, detach.signal));
          }
        },
        onClose() {
          release();
        },
        onError() {
          release();
        },
      };
    }),
  );
  return app;
};
