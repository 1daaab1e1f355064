// The upgrade of a terminal socket (./terminals.ts), after its key and agent were checked: the
// tenant's socket slot, the terminal looked up in the agent's sandbox, and the socket's events
// (./terminal-socket.ts). Invariants: the slot is taken synchronously, before any await, and held
// until the connection is gone (its TCP socket's close releases it too, as an upgrade whose
// handshake never completes gets neither onOpen nor onClose); every refusal happens before the
// upgrade, so it is a plain JSON error; a deleted agent's sockets close 1000 `agent deleted`, and a
// socket whose key is revoked meanwhile closes 1008 (../key-watch.ts).
import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';
import type { WSEvents } from 'hono/ws';
import type { AgentService } from '../../agents/service.ts';
import { SandboxError } from '../../errors.ts';
import type { SandboxTerminals } from '../../sandbox/types.ts';
import type { ApiEnv } from '../env.ts';
import { onKeyRefused } from '../key-watch.ts';
import type { TenantLimiter } from '../limits.ts';
import {
  closeWith,
  holdSocket,
  openSocket,
  socketMessage,
  type TerminalGauges,
  type TerminalSocket,
} from './terminal-socket.ts';

/** What terminalRoutes keeps for all its sockets. */
export interface TerminalRoutesState extends TerminalGauges {
  agents: AgentService;
  maxSockets: number;
  sockets: TenantLimiter;
  /** A frame from a client or output to it (TerminalRouteOptions.activity). */
  activity: () => void;
}

/** The events of a socket to terminal `tid` of the request's agent; throws (before the upgrade) to refuse. */
export async function upgradeTerminal(state: TerminalRoutesState, c: Context<ApiEnv>): Promise<WSEvents> {
  const { agents, maxSockets, sockets } = state;
  if (c.req.header('upgrade')?.toLowerCase() !== 'websocket')
    throw new SandboxError('BAD_REQUEST', 'Connect to a terminal with a WebSocket (Upgrade: websocket).');
  const tenantId = c.get('tenant').id;
  const agent = c.get('agent');
  const tid = c.req.param('tid') ?? '';
  // The slot is taken here, synchronously, and held until the connection is gone: checking
  // after the awaits below would let every concurrent attempt pass the same check.
  const slot = sockets.tryAcquire(tenantId);
  if (slot === undefined)
    throw new SandboxError('RATE_LIMITED', `At most ${maxSockets} terminal sockets per tenant; close one.`, {
      data: { retryAfterS: 5 },
    });
  const hold = holdSocket(state, slot);
  const { release } = hold;
  // The connection's own end releases too: an upgrade whose handshake never completes gets
  // neither onOpen nor onClose.
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  incoming?.socket.once('close', release);
  let terms: SandboxTerminals | undefined;
  try {
    const sandbox = await agents.sandbox(agent);
    terms = sandbox.terminals;
    const found =
      terms && /^[A-Za-z0-9_-]{1,64}$/.test(tid) ? (await terms.list()).find((t) => t.id === tid) : undefined;
    if (!found) throw new SandboxError('NOT_FOUND', `No terminal ${JSON.stringify(tid.slice(0, 80))}.`);
  } catch (error) {
    incoming?.socket.off('close', release);
    release();
    throw error;
  }
  const rawOffset = Number(c.req.query('offset'));
  const s: TerminalSocket = {
    hold,
    terminal: terms as SandboxTerminals,
    tid,
    offset: Number.isSafeInteger(rawOffset) && rawOffset >= 0 ? rawOffset : undefined,
    ws: undefined,
    deleted: false,
    input: Promise.resolve(),
    pending: 0,
    paused: false,
    activity: state.activity,
  };
  const stopDeleted = agents.onDeleted(agent, () => {
    s.deleted = true;
    closeWith(s.ws, 1000, 'agent deleted');
    release();
  });
  // A key revoked (or its tenant deleting) while the socket is open ends it: 1008, like a refusal.
  const stopKey = onKeyRefused(c, () => {
    closeWith(s.ws, 1008, 'API key revoked');
    release();
  });
  hold.stopWatching = () => {
    stopDeleted();
    stopKey();
  };
  return {
    onOpen(_event, socket) {
      openSocket(s, socket);
    },
    onMessage(event, socket) {
      state.activity();
      socketMessage(s, event.data, socket);
    },
    onClose() {
      release();
    },
    onError() {
      release();
    },
  };
}
