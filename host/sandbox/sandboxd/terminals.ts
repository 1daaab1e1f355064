// Host side of sandboxd's terminals (SandboxTerminals over one connection). Arguments are checked
// here before they cross; answers were already validated against schemas.ts by the connection.
// An attach is one long call whose streamed `tout` frames carry the output; cancelling it (the
// caller's signal) ends the stream, never the terminal.

import { SandboxError } from '../../errors.ts';
import type { SandboxTerminals, TerminalInfo } from '../types.ts';
import type { Connection } from './connection.ts';

const MAX_WRITE_BYTES = 1024 * 1024;
const ID = /^[A-Za-z0-9_-]{1,64}$/;

const idOf = (id: string): string => {
  if (typeof id !== 'string' || !ID.test(id))
    throw new SandboxError('TERMINAL_NOT_FOUND', `No terminal ${JSON.stringify(String(id).slice(0, 80))}.`);
  return id;
};
const size = (n: number, what: string): number => {
  if (!Number.isInteger(n) || n < 1 || n > 1000)
    throw new SandboxError('INVALID_ARGUMENTS', `${what} must be an integer from 1 to 1000.`);
  return n;
};

export const createTerminalClient = (
  conn: Connection,
  resolve: (path: string) => string,
  callTimeoutMs: number,
): SandboxTerminals => {
  const plain = { timeoutMs: callTimeoutMs };
  return {
    open: async (o = {}) =>
      conn.call(
        'termOpen',
        {
          command: o.command,
          cwd: resolve(o.cwd ?? '.'),
          env: o.env,
          cols: o.cols === undefined ? undefined : size(o.cols, 'cols'),
          rows: o.rows === undefined ? undefined : size(o.rows, 'rows'),
          name: o.name,
          reuse: o.reuse === true,
          echo: o.echo !== false,
        },
        plain,
      ),
    async list(): Promise<TerminalInfo[]> {
      return (await conn.call('termList', {}, plain)).terminals;
    },
    async write(id, data) {
      const buf =
        typeof data === 'string'
          ? Buffer.from(data)
          : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
      idOf(id);
      for (let at = 0; at < buf.length; at += MAX_WRITE_BYTES) {
        const data = buf.subarray(at, at + MAX_WRITE_BYTES).toString('base64');
        await conn.call('termWrite', { id, data }, plain);
      }
    },
    async read(id, o = {}) {
      const waitMs = Math.max(0, Math.floor(o.waitMs ?? 0));
      const value = await conn.call(
        'termRead',
        {
          id: idOf(id),
          offset: o.offset === undefined ? undefined : Math.max(0, Math.floor(o.offset)),
          count: o.count === undefined ? undefined : Math.max(0, Math.floor(o.count)),
          waitMs,
        },
        { timeoutMs: callTimeoutMs + waitMs, signal: o.signal },
      );
      return { ...value, data: Buffer.from(value.data, 'base64') };
    },
    resize: async (id, cols, rows) =>
      conn.call('termResize', { id: idOf(id), cols: size(cols, 'cols'), rows: size(rows, 'rows') }, plain),
    signal: async (id, signal) => conn.call('termSignal', { id: idOf(id), signal }, plain),
    close: async (id) => conn.call('termClose', { id: idOf(id) }, plain),
    async attach(id, o) {
      try {
        return await conn.call(
          'termAttach',
          { id: idOf(id), offset: o.offset === undefined ? undefined : Math.max(0, Math.floor(o.offset)) },
          // A stream: no deadline of its own (the connection failing or the signal ends it).
          { timeoutMs: 2 ** 31 - 1, signal: o.signal, onTerm: (offset, data) => o.onData(data, offset) },
        );
      } catch (e) {
        // An aborted attach is a detach: answer with the terminal as it is now.
        if (e instanceof SandboxError && e.code === 'ABORTED' && o.signal?.aborted) {
          const all = await conn.call('termList', {}, plain);
          const t = all.terminals.find((x) => x.id === id);
          if (t) return t;
        }
        throw e;
      }
    },
  };
};
