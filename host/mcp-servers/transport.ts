// An MCP client Transport over a program on pipes in the agent's sandbox (SandboxStdio): newline-
// delimited JSON-RPC, framed by the SDK's ReadBuffer and serializeMessage, as its stdio transport
// does, but over sandboxd's stream instead of a local child process.
// Everything the program writes is hostile input: the read buffer is capped (a line longer than
// maxMessageBytes ends the program, and the reason is kept for the calls that fail with it); lines
// that are not JSON are skipped (servers that log to stdout), other malformed messages are reported
// through onerror and skipped. What it sends is also charged to budgets (a burst, refilled at a
// steady rate; `OUTPUT_BUDGET`): the API process parses and handles each line on its one event
// loop, so a server flooding notifications, requests or junk lines held that loop (GET /v1/health
// took 1.8-2.2 s, the process grew by up to 265 MiB in 5 s: adversarial-code.test.ts); past a
// budget the program is cut off like an oversize line, before what overdraws it is handled.
// Invariants: onclose fires exactly once, whether the program ended, the host closed it or it was
// cut off; nothing is delivered after it.
import {
  type JSONRPCMessage,
  ReadBuffer,
  serializeMessage,
  type Transport,
} from '@modelcontextprotocol/client';
import type { SandboxStdio, StdioEnd } from '../sandbox/types.ts';

/**
 * What a server may send, at once (the burst) and per second after it: lines (JSON or not, each
 * parsed: ~20 µs) and bytes, and messages nobody asked for (notifications, requests to us, stray or
 * repeated answers), which the SDK's client then handles at ~250 µs each (measured here: 10,000
 * notifications took 2.7 s of the event loop). The first answer to each of our requests is free, so
 * a program's many calls never count; log and progress notifications fit at any sensible rate.
 */
export const OUTPUT_BUDGET = {
  burstLines: 10_000,
  linesPerSecond: 2_000,
  burstBytes: 32 * 1024 * 1024,
  bytesPerSecond: 16 * 1024 * 1024,
  burstUnasked: 1_000,
  unaskedPerSecond: 100,
};

/** Our requests remembered as unanswered at most (aborted ones are never answered). */
const MAX_ASKED = 10_000;

/** A token bucket: `take(n)` is false when n is more than what is left (nothing is taken then). */
export class Budget {
  readonly #burst: number;
  readonly #perSecond: number;
  #left: number;
  #at = performance.now();
  constructor(burst: number, perSecond: number) {
    this.#burst = burst;
    this.#perSecond = perSecond;
    this.#left = burst;
  }
  take(n: number): boolean {
    const now = performance.now();
    this.#left = Math.min(this.#burst, this.#left + ((now - this.#at) * this.#perSecond) / 1000);
    this.#at = now;
    if (n > this.#left) return false;
    this.#left -= n;
    return true;
  }
}

/**
 * A server's messages nobody asked for, on their budget (burstUnasked, then unaskedPerSecond): the
 * first answer to each request we sent is free (its id remembered until then, at most MAX_ASKED;
 * aborted requests are never answered), anything else takes a token. Both transports use it.
 */
export class UnaskedMessages {
  readonly #asked = new Set<string | number>();
  readonly #tokens: Budget;
  readonly #over: string;
  constructor(budget: Pick<typeof OUTPUT_BUDGET, 'burstUnasked' | 'unaskedPerSecond'>) {
    this.#tokens = new Budget(budget.burstUnasked, budget.unaskedPerSecond);
    this.#over =
      `it sent more messages nobody asked for than its budget (${budget.burstUnasked} at once, ` +
      `then ${budget.unaskedPerSecond} a second)`;
  }
  /** Notes a message we send: a request's id, so that its first answer is free. */
  sent(message: JSONRPCMessage): void {
    if ('method' in message && 'id' in message && this.#asked.size < MAX_ASKED) this.#asked.add(message.id);
  }
  /** Why the server is cut for sending `message` (over budget), or undefined: pass it on. */
  over(message: JSONRPCMessage): string | undefined {
    const answer =
      !('method' in message) && 'id' in message && this.#asked.delete(message.id as string | number);
    return answer || this.#tokens.take(1) ? undefined : this.#over;
  }
  clear(): void {
    this.#asked.clear();
  }
}

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
  /** Default OUTPUT_BUDGET. */
  budget?: typeof OUTPUT_BUDGET;
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
  readonly #budget: typeof OUTPUT_BUDGET;
  readonly #lines: Budget;
  readonly #bytes: Budget;
  readonly #unasked: UnaskedMessages;

  constructor(options: SandboxTransportOptions) {
    this.#options = options;
    this.#buffer = new ReadBuffer({ maxBufferSize: options.maxMessageBytes });
    this.#budget = options.budget ?? OUTPUT_BUDGET;
    this.#lines = new Budget(this.#budget.burstLines, this.#budget.linesPerSecond);
    this.#bytes = new Budget(this.#budget.burstBytes, this.#budget.bytesPerSecond);
    this.#unasked = new UnaskedMessages(this.#budget);
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
    if (this.#closed || this.#why !== undefined) return;
    // Charged before anything of the chunk is parsed: every line, JSON or not, and every byte.
    if (!this.#bytes.take(chunk.length) || !this.#lines.take(linesIn(chunk))) {
      const b = this.#budget;
      this.#cut(
        `it sent more than its output budget (${b.burstLines} lines or ${b.burstBytes} bytes at once, ` +
          `then ${b.linesPerSecond} lines and ${b.bytesPerSecond} bytes a second)`,
      );
      return;
    }
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
      const over = this.#unasked.over(message);
      if (over !== undefined) {
        this.#cut(over);
        return;
      }
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
    this.#unasked.sent(message);
    await this.#write(Buffer.from(serializeMessage(message), 'utf8'));
  }

  async close(): Promise<void> {
    this.#cut('the service stopped it');
    this.#finish();
  }
}

/** Newlines in a chunk (each ends a line the read buffer parses). */
function linesIn(chunk: Buffer): number {
  let n = 0;
  for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) n++;
  return n;
}
