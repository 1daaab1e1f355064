// An MCP client Transport over a program on pipes in the agent's sandbox (SandboxStdio): newline-
// delimited JSON-RPC, framed by the SDK's ReadBuffer and serializeMessage, as its stdio transport
// does, but over sandboxd's stream instead of a local child process.
// Everything the program writes is hostile input: the read buffer is capped (a line longer than
// maxMessageBytes ends the program, and the reason is kept for the calls that fail with it); lines
// that are not JSON are skipped (servers that log to stdout), other malformed messages are reported
// through onerror and skipped. Invariants: onclose fires exactly once, whether the program ended,
// the host closed it or it was cut off; nothing is delivered after it.
import {
  type JSONRPCMessage,
  ReadBuffer,
  serializeMessage,
  type Transport,
} from '@modelcontextprotocol/client';
import type { SandboxStdio, StdioEnd } from '../sandbox/types.ts';

export interface SandboxTransportOptions {
  stdio: SandboxStdio;
  command: string[];
  cwd?: string;
  env?: Record<string, string>;
  /** Largest message the program may send, in bytes. */
  maxMessageBytes: number;
  /** Keeps the end of the program's stderr (for error messages). */
  onStderr?: (chunk: Buffer) => void;
  /** How the program ended (after onclose's cause is known). */
  onEnd?: (end: StdioEnd, why: string | undefined) => void;
}

export class SandboxStdioTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: (<T extends JSONRPCMessage>(message: T) => void) | undefined;

  readonly #options: SandboxTransportOptions;
  readonly #abort = new AbortController();
  readonly #buffer: ReadBuffer;
  #write: ((data: Uint8Array) => Promise<void>) | undefined;
  #closed = false;
  /** Why we cut the program off, when we did. */
  #why: string | undefined;

  constructor(options: SandboxTransportOptions) {
    this.#options = options;
    this.#buffer = new ReadBuffer({ maxBufferSize: options.maxMessageBytes });
  }

  async start(): Promise<void> {
    if (this.#write !== undefined) throw new Error('SandboxStdioTransport already started');
    const program = this.#options.stdio.open({
      command: this.#options.command,
      ...(this.#options.cwd === undefined ? {} : { cwd: this.#options.cwd }),
      ...(this.#options.env === undefined ? {} : { env: this.#options.env }),
      signal: this.#abort.signal,
      onStdout: (chunk) => this.#onStdout(chunk),
      ...(this.#options.onStderr ? { onStderr: this.#options.onStderr } : {}),
    });
    this.#write = (data) => program.write(data);
    void program.ended.then((end) => {
      this.#options.onEnd?.(end, this.#why);
      this.#finish();
    });
  }

  #onStdout(chunk: Buffer): void {
    if (this.#closed) return;
    try {
      this.#buffer.append(chunk);
    } catch {
      this.#cut(`it sent a message over ${this.#options.maxMessageBytes} bytes`);
      return;
    }
    for (;;) {
      let message: JSONRPCMessage | null;
      try {
        message = this.#buffer.readMessage();
      } catch (error) {
        // JSON, but not JSON-RPC: skipped (the line is consumed), reported.
        this.onerror?.(new Error(`MCP server sent a malformed message: ${String(error).slice(0, 200)}`));
        continue;
      }
      if (message === null || this.#closed) return;
      this.onmessage?.(message);
    }
  }

  /** Ends the program for a reason of ours (kept for the calls that fail with it). */
  #cut(why: string): void {
    this.#why ??= why;
    this.#abort.abort();
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#buffer.clear();
    this.#abort.abort();
    this.onclose?.();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed || this.#write === undefined) throw new Error('The MCP server is not running.');
    await this.#write(Buffer.from(serializeMessage(message), 'utf8'));
  }

  async close(): Promise<void> {
    this.#cut('the service stopped it');
    this.#finish();
  }
}
