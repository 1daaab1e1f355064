// Host side of sandboxd's programs on pipes (SandboxStdio over one connection). A program is one
// long `stdioOpen` call whose `out` frames carry its stdout and stderr and whose answer is its exit;
// `stdioWrite` calls, naming it by a key we choose, feed its stdin in order. Cancelling the open
// (the caller's signal) or losing the connection ends the program (sandboxd kills its group).
// Invariant: `ended` always resolves, once, and writes after it fail at once.

import { randomBytes } from 'node:crypto';
import { SandboxError } from '../../errors.ts';
import type { SandboxStdio, StdioEnd, StdioOpenOptions, StdioProgram } from '../types.ts';
import type { Connection } from './connection.ts';

/** sandboxd's cap on one stdioWrite. */
const MAX_WRITE_BYTES = 4 * 1024 * 1024;
/** An open is a subscription: no deadline of its own (its signal or the connection ends it). */
const FOREVER_MS = 2 ** 31 - 1;

const errorOf = (e: unknown): { code: string; message: string } =>
  e instanceof SandboxError
    ? { code: e.code, message: e.message }
    : { code: 'SANDBOX_UNAVAILABLE', message: e instanceof Error ? e.message : String(e) };

export const createStdioClient = (
  conn: Connection,
  resolve: (path: string) => string,
  callTimeoutMs: number,
): SandboxStdio => ({
  open(o: StdioOpenOptions): StdioProgram {
    const key = `p${randomBytes(9).toString('hex')}`;
    let done: StdioEnd | undefined;
    let writing: Promise<void> = Promise.resolve();
    const ended = conn
      .call(
        'stdioOpen',
        { key, command: o.command, cwd: resolve(o.cwd ?? '.'), env: o.env },
        {
          timeoutMs: FOREVER_MS,
          signal: o.signal,
          onOut: (stream, data) => (stream === 'stdout' ? o.onStdout(data) : o.onStderr?.(data)),
        },
      )
      .then(
        (value): StdioEnd => value,
        (e: unknown): StdioEnd => ({ exitCode: null, signal: null, error: errorOf(e) }),
      )
      .then((end) => {
        done = end;
        return end;
      });
    async function writeAll(data: Uint8Array): Promise<void> {
      const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
      for (let at = 0; at < buf.length; at += MAX_WRITE_BYTES) {
        if (done !== undefined)
          throw new SandboxError('CONFLICT', 'The program has ended; its input is closed.');
        const part = buf.subarray(at, at + MAX_WRITE_BYTES).toString('base64');
        await conn.call('stdioWrite', { key, data: part }, { timeoutMs: callTimeoutMs });
      }
    }
    return {
      ended,
      // Writes go out one after another, so the program reads them in the order they were made.
      write(data) {
        const next = writing.then(() => writeAll(data));
        writing = next.catch(() => {});
        return next;
      },
    };
  },
});
