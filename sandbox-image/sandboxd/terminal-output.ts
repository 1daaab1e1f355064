// Reading a terminal's output from its ring: termRead (a chunk from an offset or from where the
// last read ended, optionally waiting for more) and termAttach (a live stream from an offset until
// the terminal ends or the call is cancelled). A slow host never blocks the terminal: it skips
// what the ring has dropped (the offsets show the gap).
// Invariants: an attach sends only while its io is not blocked, resumes at drain, and removes its
// listeners when it ends; a read's cursor only moves forward.

import type { TerminalInfo } from '../../sandbox-wire/terminal.ts';
import { get, info, type Terminal, type TerminalsState } from './terminal-state.ts';
import { type Args, optInt, sleep } from './util.ts';

const MAX_READ_BYTES = 1024 * 1024;
const DEFAULT_READ_BYTES = 64 * 1024;
const STREAM_CHUNK = 64 * 1024;
const MAX_WAIT_MS = 60 * 60 * 1000;

export interface TerminalStreamIo {
  /** Send one chunk of output at its absolute offset; false means "wait for drain". */
  send(offset: number, data: Buffer): boolean;
  onDrain(fn: () => void): void;
}

/** Resolves at the next append or end, after `ms`, or when `signal` aborts. */
function change(t: Terminal, ms: number, signal?: AbortSignal): Promise<void> {
  const ac = new AbortController();
  const wake = (): void => ac.abort();
  t.listeners.add(wake);
  signal?.addEventListener('abort', wake, { once: true });
  return sleep(ms, ac.signal).finally(() => {
    t.listeners.delete(wake);
    signal?.removeEventListener('abort', wake);
  });
}

export async function termRead(s: TerminalsState, args: Args, signal: AbortSignal) {
  const t = get(s, args);
  const asked = args.offset === undefined || args.offset === null ? t.cursor : optInt(args, 'offset', 0);
  const count = optInt(args, 'count', DEFAULT_READ_BYTES, MAX_READ_BYTES);
  const waitMs = optInt(args, 'waitMs', 0, MAX_WAIT_MS);
  if (waitMs > 0 && t.status === 'running' && asked >= t.ring.end) await change(t, waitMs, signal);
  const { data, offset } = t.ring.read(asked, count);
  const nextOffset = offset + data.length;
  t.cursor = Math.max(t.cursor, nextOffset);
  return {
    ...info(t),
    data: data.toString('base64'),
    offset,
    nextOffset,
    dropped: Math.max(0, t.ring.start - asked),
  };
}

/** Streams the terminal's output from `offset` (default: the oldest byte held) until it ends. */
export async function termAttach(
  s: TerminalsState,
  args: Args,
  io: TerminalStreamIo,
  signal: AbortSignal,
): Promise<TerminalInfo> {
  const t = get(s, args);
  let cursor = optInt(args, 'offset', t.ring.start);
  let blocked = false;
  let wake: () => void = () => {};
  const pump = (): void => {
    while (!blocked && !signal.aborted && cursor < t.ring.end) {
      const { data, offset } = t.ring.read(cursor, STREAM_CHUNK);
      cursor = offset + data.length;
      if (!io.send(offset, data)) {
        blocked = true;
        io.onDrain(() => {
          blocked = false;
          pump();
          wake();
        });
      }
    }
  };
  t.listeners.add(pump);
  try {
    for (;;) {
      pump();
      if (signal.aborted || (t.status !== 'running' && cursor >= t.ring.end)) break;
      await new Promise<void>((resolve) => {
        const done = (): void => {
          t.listeners.delete(done);
          signal.removeEventListener('abort', done);
          resolve();
        };
        wake = done;
        t.listeners.add(done);
        signal.addEventListener('abort', done, { once: true });
      });
    }
  } finally {
    t.listeners.delete(pump);
  }
  return info(t);
}
