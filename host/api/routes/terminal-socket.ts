// One attached terminal socket of ./terminals.ts: its hold on the tenant's socket slot (SocketHold,
// taken before any await and released exactly once), and the socket's input queue and output
// (TerminalSocket). Input and controls run one after another, in arrival order; their bytes count
// as pending (per socket and in the routes' gauges) until the sandbox took them.
// Invariants: above INPUT_HIGH pending bytes the socket is paused (TCP pushes back on the client)
// and resumed at or below INPUT_LOW; pending input over INPUT_LIMIT closes it 1008; output queued
// for the client over MAX_BUFFERED closes it 1013 (it may reconnect with ?offset=); nothing runs for
// a released socket.
import type { WSContext, WSMessageReceive } from 'hono/ws';
import { isSandboxError } from '../../errors.ts';
import type { SandboxTerminals } from '../../sandbox/types.ts';
import {
  controlOf,
  FRAME_COST,
  INPUT_HIGH,
  INPUT_LIMIT,
  INPUT_LOW,
  MAX_BUFFERED,
  type RawSocket,
  writeWhenReady,
} from './terminal-wire.ts';

/** The routes' counts behind the terminal gauges. */
export interface TerminalGauges {
  open: number;
  inputPending: number;
  inputPendingMax: number;
}

/** A socket's tenant slot and its detach signal; `release` (bound once) is safe to call again. */
export interface SocketHold {
  gauges: TerminalGauges;
  slot: () => void;
  released: boolean;
  detach: AbortController;
  stopWatching: () => void;
  release: () => void;
}

/** The socket of one terminal, once the terminal was found. */
export interface TerminalSocket {
  hold: SocketHold;
  terminal: SandboxTerminals;
  tid: string;
  offset: number | undefined;
  ws: WSContext | undefined;
  deleted: boolean;
  input: Promise<void>;
  pending: number;
  paused: boolean;
  /** Output sent to the client (TerminalRouteOptions.activity). */
  activity: () => void;
}

/** Counts the socket open on a slot just taken. */
export function holdSocket(gauges: TerminalGauges, slot: () => void): SocketHold {
  gauges.open++;
  const hold: SocketHold = {
    gauges,
    slot,
    released: false,
    detach: new AbortController(),
    stopWatching: () => {},
    release: () => releaseHold(hold),
  };
  return hold;
}

function releaseHold(hold: SocketHold): void {
  hold.detach.abort();
  hold.stopWatching();
  if (hold.released) return;
  hold.released = true;
  hold.gauges.open--;
  hold.slot();
}

export function closeWith(socket: WSContext | undefined, code: number, reason: string): void {
  if (socket && (socket.readyState === 0 || socket.readyState === 1))
    socket.close(code, reason.slice(0, 120));
}

function enqueue(s: TerminalSocket, socket: WSContext, bytes: number, work: () => Promise<unknown>): void {
  const { hold } = s;
  const { gauges } = hold;
  if (hold.released) return;
  const cost = bytes + FRAME_COST;
  if (s.pending + cost > INPUT_LIMIT) {
    closeWith(socket, 1008, 'terminal input too fast');
    hold.release();
    return;
  }
  s.pending += cost;
  gauges.inputPending += cost;
  gauges.inputPendingMax = Math.max(gauges.inputPendingMax, gauges.inputPending);
  const raw = socket.raw as RawSocket | undefined;
  if (s.pending > INPUT_HIGH && !s.paused && raw?.pause) {
    s.paused = true;
    raw.pause();
  }
  s.input = s.input
    .then(() => (hold.released ? undefined : work()))
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
      s.pending -= cost;
      gauges.inputPending -= cost;
      if (s.paused && s.pending <= INPUT_LOW) {
        s.paused = false;
        raw?.resume?.();
      }
    });
}

/** The socket is open: replay the buffered output (from the offset), then stream it live. */
export function openSocket(s: TerminalSocket, socket: WSContext): void {
  const { hold, terminal, tid, offset } = s;
  s.ws = socket;
  if (s.deleted || hold.released) {
    closeWith(socket, 1000, s.deleted ? 'agent deleted' : 'closed');
    return;
  }
  terminal
    .attach(tid, {
      ...(offset === undefined ? {} : { offset }),
      signal: hold.detach.signal,
      onData: (data) => {
        const raw = socket.raw as RawSocket | undefined;
        if ((raw?.bufferedAmount ?? 0) > MAX_BUFFERED) {
          hold.detach.abort();
          closeWith(socket, 1013, 'client too slow; reconnect with ?offset= to resume');
          return;
        }
        if (socket.readyState !== 1) return;
        s.activity();
        socket.send(new Uint8Array(data));
      },
    })
    .then(
      (info) => {
        if (info.status === 'exited')
          closeWith(socket, 1000, `terminal exited${info.exitCode === null ? '' : ` (${info.exitCode})`}`);
      },
      () => closeWith(socket, 1011, 'sandbox connection lost'),
    );
}

/** A frame from the client: a JSON control (resize, signal) or input, queued in arrival order. */
export function socketMessage(s: TerminalSocket, data: WSMessageReceive, socket: WSContext): void {
  const { terminal, tid } = s;
  if (typeof data === 'string') {
    const control = controlOf(data);
    const bytes = Buffer.byteLength(data);
    if (control?.type === 'resize')
      enqueue(s, socket, bytes, () => terminal.resize(tid, control.cols, control.rows));
    else if (control?.type === 'signal')
      enqueue(s, socket, bytes, () => terminal.signal(tid, control.signal));
    else enqueue(s, socket, bytes, () => writeWhenReady(terminal, tid, data, s.hold.detach.signal));
  } else if (data instanceof ArrayBuffer) {
    const bytes = new Uint8Array(data);
    enqueue(s, socket, bytes.byteLength, () => writeWhenReady(terminal, tid, bytes, s.hold.detach.signal));
  }
}
