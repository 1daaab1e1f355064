// A person's attachment to one of the agent's terminals (a PTY in its sandbox) over the terminal
// WebSocket, as a pair of web streams: `readable` gives the terminal's bytes (the buffered output
// first, from `offset` when given, then live), `writable` takes keystrokes. It works in browsers
// too: the key travels as the `bearer.<key>` subprotocol next to `dsh.terminal.v1`, never in the
// URL. Input is always sent as binary frames, so typed text that happens to be JSON is never read
// as a control; resize and signal are the text controls. In Node, `Duplex.fromWeb(terminal)` makes
// it a stream.Duplex.
import { DshError } from './errors.ts';
import type { Transport } from './http.ts';

export const TERMINAL_PROTOCOL = 'dsh.terminal.v1';

export interface TerminalOptions {
  /** Replay the buffered output from this absolute byte offset. Default: all that is buffered. */
  offset?: number;
}

export interface DshTerminal {
  /** The terminal's output. Ends when the socket closes (see `closed` for why). */
  readonly readable: ReadableStream<Uint8Array>;
  /** Input: text (UTF-8) or bytes, as typed; `\r` is Enter. Closing it closes the socket. */
  readonly writable: WritableStream<string | Uint8Array>;
  /** Resizes the PTY. */
  resize(cols: number, rows: number): void;
  /** Sends a signal to the terminal's foreground program (SIGINT, SIGTERM, SIGKILL, SIGTSTP, …). */
  signal(name: string): void;
  /** Detaches (the terminal keeps running in the sandbox). */
  close(): void;
  /** How the socket closed: 1000 when the terminal's program exited or on close(). */
  readonly closed: Promise<{ code: number; reason: string }>;
}

export function openTerminal(
  transport: Transport,
  agentId: string,
  terminalId: string,
  options: TerminalOptions = {},
): Promise<DshTerminal> {
  const url = new URL(
    `${transport.baseUrl}/v1/agents/${encodeURIComponent(agentId)}/terminals/${encodeURIComponent(terminalId)}`,
  );
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  if (options.offset !== undefined) url.searchParams.set('offset', String(options.offset));
  const socket = new transport.WebSocket(url, [TERMINAL_PROTOCOL, `bearer.${transport.apiKey}`]);
  socket.binaryType = 'arraybuffer';
  const encoder = new TextEncoder();

  let output!: ReadableStreamDefaultController<Uint8Array>;
  const readable = new ReadableStream<Uint8Array>({
    start(controller) {
      output = controller;
    },
    cancel() {
      socket.close(1000);
    },
  });
  socket.addEventListener('message', (event) => {
    const data = event.data as ArrayBuffer | string;
    try {
      output.enqueue(typeof data === 'string' ? encoder.encode(data) : new Uint8Array(data));
    } catch {
      // the reader cancelled: the socket is closing
    }
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    socket.addEventListener('close', (event) => {
      try {
        output.close();
      } catch {
        // already closed or cancelled by the reader
      }
      resolve({ code: event.code, reason: event.reason });
    });
  });
  const writable = new WritableStream<string | Uint8Array>({
    write(chunk) {
      if (socket.readyState !== socket.OPEN) throw new DshError('CONFLICT', 'The terminal socket is closed.');
      socket.send(typeof chunk === 'string' ? encoder.encode(chunk) : chunk);
    },
    close() {
      socket.close(1000);
    },
  });
  const control = (message: object) => {
    if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message));
  };
  const terminal: DshTerminal = {
    readable,
    writable,
    resize: (cols, rows) => control({ type: 'resize', cols, rows }),
    signal: (name) => control({ type: 'signal', signal: name }),
    close: () => socket.close(1000),
    closed,
  };

  return new Promise((resolve, reject) => {
    const opened = () => {
      socket.removeEventListener('error', refused);
      resolve(terminal);
    };
    // A refused upgrade shows no status through the WebSocket API; the agent route tells apart a
    // missing agent or a bad key (typed errors of their own) from the terminal itself.
    const refused = () => {
      socket.removeEventListener('open', opened);
      transport
        .request(`/v1/agents/${encodeURIComponent(agentId)}`)
        .then(
          () =>
            new DshError(
              'NOT_FOUND',
              `The terminal ${JSON.stringify(terminalId)} refused the connection: no such terminal, or the tenant has its most terminal sockets open.`,
            ),
          (error: unknown) => error,
        )
        .then(reject);
    };
    socket.addEventListener('open', opened, { once: true });
    socket.addEventListener('error', refused, { once: true });
  });
}
