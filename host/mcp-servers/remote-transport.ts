// A remote MCP server's transport: the SDK's Streamable HTTP transport over the egress gateway's
// fetch, with what the server sends metered as SandboxStdioTransport meters a stdio program's
// output (./transport.ts). Everything the server sends is hostile input: every response body (a
// POST's answer, JSON or an SSE stream, and the GET stream of notifications, which lives as long
// as the session) is read through a meter that charges it while it streams, before the SDK parses
// any of it: its bytes and its SSE lines against the session's budgets (a burst, then a steady
// rate: `REMOTE_BUDGET`), a JSON body or one SSE event past `maxMessageBytes` (the SDK buffers an
// event whole before it parses it), every message nobody asked for against the unasked budget,
// and the GET stream's (re)openings (the SDK reopens a stream the server ends, as soon as the
// server's `retry:` field says). Past any of them the session is cut: the reason is kept (onCut,
// for the calls that fail with it: MCP_SERVER_FAILED, as a stdio server's), every request and
// stream of the session is aborted, and what overdrew the budget is never handed to the SDK.
// Other sessions, of this tenant or another, are not touched: every budget is the session's own.
// Invariants: onclose fires exactly once; nothing is delivered after the cut; a cut session sends
// nothing more.
import {
  type FetchLike,
  type JSONRPCMessage,
  StreamableHTTPClientTransport,
  type StreamableHTTPClientTransportOptions,
  type Transport,
  type TransportSendOptions,
} from '@modelcontextprotocol/client';
import { SandboxError } from '../errors.ts';
import { Budget, OUTPUT_BUDGET, UnaskedMessages } from './transport.ts';

/**
 * A remote session's budgets: a stdio program's (bytes of every body; lines of SSE streams, each
 * parsed; messages nobody asked for), and the GET stream's openings: a burst, then one every 10 s
 * (a server that ends its stream at once, with `retry: 0`, was reopened in a tight loop).
 */
export const REMOTE_BUDGET = {
  ...OUTPUT_BUDGET,
  burstStreams: 10,
  streamsPerSecond: 0.1,
};

export interface RemoteTransportOptions {
  /** Largest JSON body or SSE event the server may send, in bytes. */
  maxMessageBytes: number;
  /** Why the session was cut, once, before it closes (the runner keeps it for the calls it fails). */
  onCut?: (why: string) => void;
  /** Default REMOTE_BUDGET. */
  budget?: typeof REMOTE_BUDGET;
}

type OnMessage = NonNullable<Transport['onmessage']>;

/** A body being read: whether it is an SSE stream, and where its framing stands. */
interface BodyState {
  sse: boolean;
  /** JSON: bytes so far. SSE: bytes of the event so far (its complete lines). */
  size: number;
  /** SSE: bytes of the line under way (no newline yet). */
  line: number;
  /** SSE: the last byte read was a carriage return (a line of just `\r` is blank). */
  cr: boolean;
}

export class RemoteTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: OnMessage | undefined;

  readonly #inner: StreamableHTTPClientTransport;
  readonly #fetch: FetchLike;
  readonly #options: RemoteTransportOptions;
  readonly #budget: typeof REMOTE_BUDGET;
  readonly #bytes: Budget;
  readonly #lines: Budget;
  readonly #unasked: UnaskedMessages;
  readonly #streams: Budget;
  /** Why we cut the session, when we did. */
  #why: string | undefined;
  #closed = false;

  constructor(
    url: URL,
    sdk: StreamableHTTPClientTransportOptions & { fetch: FetchLike },
    options: RemoteTransportOptions,
  ) {
    this.#options = options;
    this.#budget = options.budget ?? REMOTE_BUDGET;
    const b = this.#budget;
    this.#bytes = new Budget(b.burstBytes, b.bytesPerSecond);
    this.#lines = new Budget(b.burstLines, b.linesPerSecond);
    this.#unasked = new UnaskedMessages(b);
    this.#streams = new Budget(b.burstStreams, b.streamsPerSecond);
    this.#fetch = sdk.fetch;
    this.#inner = new StreamableHTTPClientTransport(url, {
      ...sdk,
      fetch: (u, init) => this.#metered(u, init),
    });
    this.#inner.onmessage = (message: JSONRPCMessage) => this.#onMessage(message);
    this.#inner.onerror = (error) => this.onerror?.(error);
    this.#inner.onclose = () => this.#finish();
  }

  get sessionId(): string | undefined {
    return this.#inner.sessionId;
  }

  get hasPerRequestStream(): boolean {
    return this.#inner.hasPerRequestStream;
  }

  setProtocolVersion(version: string): void {
    this.#inner.setProtocolVersion(version);
  }

  start(): Promise<void> {
    return this.#inner.start();
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (this.#why !== undefined) throw this.#cutError();
    this.#unasked.sent(message);
    await this.#inner.send(message, options);
  }

  async close(): Promise<void> {
    this.#why ??= 'the service stopped it';
    await this.#inner.close();
  }

  /** The gateway's fetch, its answer's body read through the meter. */
  async #metered(url: string | URL, init?: RequestInit): Promise<Response> {
    if (this.#why !== undefined) throw this.#cutError();
    if ((init?.method ?? 'GET').toUpperCase() === 'GET' && !this.#streams.take(1)) {
      const b = this.#budget;
      this.#cut(
        `it ended its notification stream more often than its budget (${b.burstStreams} openings, ` +
          `then one every ${Math.round(1 / b.streamsPerSecond)} s)`,
      );
      throw this.#cutError();
    }
    const response = await this.#fetch(url, init);
    // A body-less answer (or a status a constructed Response cannot carry a body with) has nothing to meter.
    if (response.body === null || NULL_BODY.has(response.status)) return response;
    const type = response.headers.get('content-type') ?? '';
    const state: BodyState = { sse: /^\s*text\/event-stream\b/i.test(type), size: 0, line: 0, cr: false };
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform: (chunk, controller) => {
          const why = this.#charge(chunk, state);
          if (why === undefined) return controller.enqueue(chunk);
          this.#cut(why);
          controller.error(this.#cutError());
        },
      }),
    );
    const metered = new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
    Object.defineProperty(metered, 'url', { value: response.url });
    return metered;
  }

  /** Charges a chunk of a body; why the session must be cut, if it must. */
  #charge(chunk: Uint8Array, state: BodyState): string | undefined {
    const b = this.#budget;
    const max = this.#options.maxMessageBytes;
    const overBudget =
      `it sent more than its output budget (${b.burstLines} lines or ${b.burstBytes} bytes at once, ` +
      `then ${b.linesPerSecond} lines and ${b.bytesPerSecond} bytes a second)`;
    if (this.#why !== undefined) return this.#why;
    if (!this.#bytes.take(chunk.length)) return overBudget;
    if (!state.sse) {
      state.size += chunk.length;
      return state.size > max ? `it sent a message over ${max} bytes` : undefined;
    }
    const lines = sseLines(chunk, state, max);
    if (lines < 0) return `it sent an event over ${max} bytes`;
    return this.#lines.take(lines) ? undefined : overBudget;
  }

  #onMessage(message: JSONRPCMessage): void {
    if (this.#closed || this.#why !== undefined) return;
    const over = this.#unasked.over(message);
    if (over !== undefined) {
      this.#cut(over);
      return;
    }
    this.onmessage?.(message);
  }

  /** Ends the session for a reason of ours: kept, told, then every request and stream aborted. */
  #cut(why: string): void {
    if (this.#why !== undefined) return;
    this.#why = why;
    this.#options.onCut?.(why);
    void this.#inner.close();
  }

  #cutError(): SandboxError {
    return new SandboxError('MCP_SERVER_FAILED', `The MCP server was stopped: ${this.#why ?? 'it closed'}.`);
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#unasked.clear();
    this.onclose?.();
  }
}

/** Statuses whose responses have no body (the Response constructor refuses one). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * The lines a chunk of an SSE stream ends (each one the SDK's parser handles), with `state` moved
 * on; -1 when the event under way grows past `max` bytes (an event ends at a blank line). Lines end
 * at `\n` (or `\r\n`); a server that ends lines with a lone `\r` has its events counted as one,
 * which can only cut it sooner.
 */
function sseLines(chunk: Uint8Array, state: BodyState, max: number): number {
  let lines = 0;
  let from = 0;
  for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, from)) {
    lines++;
    const length = state.line + (at - from);
    const lastCr = at > from ? chunk[at - 1] === 13 : state.cr;
    const blank = length === 0 || (length === 1 && lastCr);
    state.size = blank ? 0 : state.size + length + 1;
    state.line = 0;
    state.cr = false;
    from = at + 1;
    if (state.size > max) return -1;
  }
  if (from < chunk.length) {
    state.line += chunk.length - from;
    state.cr = chunk[chunk.length - 1] === 13;
  }
  return state.size + state.line > max ? -1 : lines;
}
