// WebSocket `/v1/agents/:id/terminals/:tid`: a person attached to one of the agent's terminals.
// Auth: `Authorization: Bearer <key>`, or (browsers cannot set headers on a WebSocket) a `token`
// query parameter, or a `bearer.<key>` entry in Sec-WebSocket-Protocol next to `dsh.terminal.v1`
// (the protocol the server selects; a key is never echoed back).
// Frames: binary both ways (terminal bytes); a text frame holding a JSON control message
// ({"type":"resize","cols","rows"} or {"type":"signal","signal"}) is a control, any other text is
// input. On attach the buffered output is replayed (from `?offset=N` when given), then output
// streams live; the socket closes 1000 when the terminal ends, 1011 when the sandbox connection is
// lost, 1013 when the client reads too slowly. Every check happens before the upgrade, so another
// tenant's agent or an unknown terminal is a plain 404.

import { upgradeWebSocket } from '@hono/node-server';
import { Hono } from 'hono';
import type { WSContext } from 'hono/ws';
import { WebSocketServer } from 'ws';
import type { AgentService } from '../../agents/service.ts';
import { isSandboxError, SandboxError } from '../../errors.ts';
import type { SandboxTerminals, TerminalSignal } from '../../sandbox/types.ts';
import type { TenantStore } from '../../store/index.ts';
import { bearerToken } from '../auth.ts';
import type { ApiEnv } from '../env.ts';
import { loadAgent } from './agents.ts';

export const TERMINAL_PROTOCOL = 'dsh.terminal.v1';
const BEARER_PROTOCOL = 'bearer.';
/** Largest frame a client may send (keystrokes and pastes). */
export const MAX_WS_PAYLOAD = 256 * 1024;
/** Output queued for a client beyond which it is disconnected (1013) rather than buffered. */
const MAX_BUFFERED = 8 * 1024 * 1024;
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
}

export const terminalRoutes = (
  agents: AgentService,
  tenants: TenantStore,
  options: TerminalRouteOptions = {},
): Hono<ApiEnv> => {
  const maxSockets = options.maxSocketsPerTenant ?? 32;
  const open = new Map<string, number>();
  const app = new Hono<ApiEnv>();

  app.get(
    '/v1/agents/:id/terminals/:tid',
    async function terminalAuth(c, next) {
      const token = tokenOf(
        c.req.header('authorization'),
        c.req.query('token'),
        c.req.header('sec-websocket-protocol'),
      );
      const tenant = tenants.verifyKey(token);
      if (tenant === undefined)
        throw new SandboxError('UNAUTHORIZED', 'The API key is unknown or revoked.', {
          data: { wwwAuthenticate: 'Bearer realm="dsh-sandbox", error="invalid_token"' },
        });
      c.set('tenant', tenant);
      await next();
    },
    loadAgent(agents),
    upgradeWebSocket(async (c) => {
      if (c.req.header('upgrade')?.toLowerCase() !== 'websocket')
        throw new SandboxError('BAD_REQUEST', 'Connect to a terminal with a WebSocket (Upgrade: websocket).');
      const tenantId = c.get('tenant').id;
      const tid = c.req.param('tid') ?? '';
      const sandbox = await agents.sandbox(c.get('agent'));
      const terms: SandboxTerminals | undefined = sandbox.terminals;
      const found =
        terms && /^[A-Za-z0-9_-]{1,64}$/.test(tid)
          ? (await terms.list()).find((t) => t.id === tid)
          : undefined;
      if (!terms || !found)
        throw new SandboxError('NOT_FOUND', `No terminal ${JSON.stringify(tid.slice(0, 80))}.`);
      if ((open.get(tenantId) ?? 0) >= maxSockets)
        throw new SandboxError(
          'RATE_LIMITED',
          `At most ${maxSockets} terminal sockets per tenant; close one.`,
          {
            data: { retryAfterS: 5 },
          },
        );
      const rawOffset = Number(c.req.query('offset'));
      const offset = Number.isSafeInteger(rawOffset) && rawOffset >= 0 ? rawOffset : undefined;
      const detach = new AbortController();
      let input = Promise.resolve();
      let counted = false;
      const release = (): void => {
        if (!counted) return;
        counted = false;
        const left = (open.get(tenantId) ?? 1) - 1;
        if (left <= 0) open.delete(tenantId);
        else open.set(tenantId, left);
      };
      const closeWith = (ws: WSContext, code: number, reason: string): void => {
        if (ws.readyState === 0 || ws.readyState === 1) ws.close(code, reason.slice(0, 120));
      };
      /** Input and controls run one after another, in arrival order. */
      const enqueue = (ws: WSContext, work: () => Promise<unknown>): void => {
        input = input.then(work).then(
          () => undefined,
          (e: unknown) => {
            if (isSandboxError(e) && e.code === 'CONFLICT') closeWith(ws, 1000, 'terminal exited');
            else if (!(isSandboxError(e) && e.code === 'INVALID_ARGUMENTS'))
              closeWith(ws, 1011, 'sandbox connection lost');
          },
        );
      };
      return {
        onOpen(_event, ws) {
          counted = true;
          open.set(tenantId, (open.get(tenantId) ?? 0) + 1);
          terms
            .attach(tid, {
              ...(offset === undefined ? {} : { offset }),
              signal: detach.signal,
              onData: (data) => {
                const raw = ws.raw as { bufferedAmount?: number } | undefined;
                if ((raw?.bufferedAmount ?? 0) > MAX_BUFFERED) {
                  detach.abort();
                  closeWith(ws, 1013, 'client too slow; reconnect with ?offset= to resume');
                  return;
                }
                if (ws.readyState === 1) ws.send(new Uint8Array(data));
              },
            })
            .then(
              (info) => {
                if (info.status === 'exited')
                  closeWith(
                    ws,
                    1000,
                    `terminal exited${info.exitCode === null ? '' : ` (${info.exitCode})`}`,
                  );
              },
              () => closeWith(ws, 1011, 'sandbox connection lost'),
            );
        },
        onMessage(event, ws) {
          const data = event.data;
          if (typeof data === 'string') {
            const control = controlOf(data);
            if (control?.type === 'resize') enqueue(ws, () => terms.resize(tid, control.cols, control.rows));
            else if (control?.type === 'signal') enqueue(ws, () => terms.signal(tid, control.signal));
            else enqueue(ws, () => terms.write(tid, data));
          } else if (data instanceof ArrayBuffer) {
            const bytes = new Uint8Array(data);
            enqueue(ws, () => terms.write(tid, bytes));
          }
        },
        onClose() {
          detach.abort();
          release();
        },
        onError() {
          detach.abort();
          release();
        },
      };
    }),
  );
  return app;
};
