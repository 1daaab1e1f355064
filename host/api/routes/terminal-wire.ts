// The wire of the terminal WebSocket (./terminals.ts): its subprotocol and the ws server that
// selects it, the key a socket presents (header, `token` query or `bearer.<key>` subprotocol entry),
// the JSON control messages, and the size bounds of frames, queued output and pending input.
// Invariants: a key is never echoed back as the selected subprotocol; input waits (paused) while the
// sandbox's own input queue is full, for at most STALLED_MS.

import { WebSocketServer } from 'ws';
import { isSandboxError } from '../../errors.ts';
import type { SandboxTerminals, TerminalSignal } from '../../sandbox/types.ts';
import { bearerToken } from '../auth.ts';

export const TERMINAL_PROTOCOL = 'dsh.terminal.v1';
const BEARER_PROTOCOL = 'bearer.';
/** Largest frame a client may send (keystrokes and pastes). */
export const MAX_WS_PAYLOAD = 256 * 1024;
/**
 * Output queued for a client beyond which it is disconnected (1013) rather than buffered: the
 * terminal's own replay window (1 MiB), since a client that reconnects with ?offset= can resume from
 * no further back anyway. At 8 MiB, 32 paused readers of one `yes` grew the server by 190 MB.
 */
export const MAX_BUFFERED = 1024 * 1024;
/** Input waiting for the sandbox above which the socket stops reading, and below which it resumes. */
export const INPUT_HIGH = 1024 * 1024;
export const INPUT_LOW = 256 * 1024;
/** Input waiting for the sandbox beyond which the socket is closed (1008). */
export const INPUT_LIMIT = 4 * 1024 * 1024;
/** What one queued frame costs beyond its bytes, so that floods of empty frames are bounded too. */
export const FRAME_COST = 64;
/** How long input waits for a terminal whose program stopped reading before the socket closes. */
const STALLED_MS = 30_000;

/**
 * Writes input, waiting while the sandbox says the terminal's own input queue is full
 * (LIMIT_EXCEEDED): that wait is what keeps this socket's queue growing, and so paused.
 */
export const writeWhenReady = async (
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

export const tokenOf = (
  header: string | undefined,
  query: string | undefined,
  protocols: string | undefined,
) => {
  if (header !== undefined) return bearerToken(header);
  if (query) return query;
  const offered = (protocols ?? '').split(',').map((p) => p.trim());
  const bearer = offered.find((p) => p.startsWith(BEARER_PROTOCOL));
  if (bearer) return bearer.slice(BEARER_PROTOCOL.length);
  return bearerToken(undefined); // throws the 401 with its challenge
};

type Control = { type: 'resize'; cols: number; rows: number } | { type: 'signal'; signal: TerminalSignal };
export const controlOf = (text: string): Control | undefined => {
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

/** The raw ws socket behind hono's WSContext (pause/resume are ws 8 methods). */
export interface RawSocket {
  bufferedAmount?: number;
  pause?: () => void;
  resume?: () => void;
}
