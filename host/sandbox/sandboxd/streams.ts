// The host's end of streams (sandbox-wire/streams.ts) on one sandboxd connection: the table of open
// streams by call id, what arrives for them and the credit we grant, and what we send within
// sandboxd's credit. connection.ts routes data frames, `credit` and `end` here and calls `answered`
// when a stream's call gets its answer.
// Invariants (sandboxd is untrusted): we hold at most one window per stream (RECEIVE_WINDOW_BYTES,
// plus the frame being decoded), since credit is granted back only as the consumer takes bytes; its
// bytes are views of what the socket read, never copied, each keeping alive at most twice its own
// size (protocol.ts keepParts), so the memory behind a window is at most two windows;
// data for a stream we never opened or that is answered, past the credit we granted, or after its
// end fails the whole connection (`violation`); a stream whose consumer stops or goes quiet past
// `stallMs` is abandoned: its call is cancelled and what still arrives for it is dropped (within
// its credit) until the answer removes it, so a slow or gone HTTP client never grows the host's
// memory and never leaves sandboxd reading.
// This module routes what arrives to the open streams and wires the table's parts: stream-state.ts
// holds the table (and the failures every part makes), stream-open.ts opens a stream.

import { FlowError } from '../../../sandbox-wire/streams.ts';
import { SandboxError } from '../../errors.ts';
import { openStream } from './stream-open.ts';
import { EMPTY, fail, type StreamTableOptions, type TableState } from './stream-state.ts';

export type { StreamHandle, StreamTableOptions } from './stream-state.ts';

/** One data frame's payload, in the parts it arrived in (views: no copy of bulk bytes). */
export function receiveData(t: TableState, id: number, payload: Buffer[]): void {
  const e = t.open.get(id);
  if (!e) {
    t.options.violation(`data for stream ${id}, which is not open`);
    return;
  }
  let bytes = 0;
  for (const part of payload) bytes += part.length;
  try {
    e.inbound.received(bytes);
  } catch (error) {
    if (!(error instanceof FlowError)) throw error;
    t.options.violation(`stream ${id}: ${error.message}`);
    return;
  }
  if (e.abandoned || e.failure) return;
  // An empty frame is a mark the consumer sees as an empty piece (egressAccept's "a connection
  // arrived"); marks in a row are one, so frames without bytes cannot grow the queue.
  if (bytes > 0) e.queue.push(...payload);
  else if (e.queue.at(-1) !== EMPTY) e.queue.push(EMPTY);
  else return;
  e.wake?.();
}

export function receiveCredit(t: TableState, id: number, bytes: number): void {
  const e = t.open.get(id);
  if (!e) return; // a late grant for a stream we are done with
  try {
    e.outbound.grant(bytes);
  } catch (error) {
    if (!(error instanceof FlowError)) throw error;
    t.options.violation(`stream ${id}: ${error.message}`);
  }
}

export function receiveEnd(t: TableState, id: number): void {
  const e = t.open.get(id);
  if (!e) return;
  e.inbound.end();
  e.wake?.();
}

/** The call of stream `id` was answered: nothing more may arrive for it, nothing more is sent. */
export function answered(t: TableState, id: number): void {
  const e = t.open.get(id);
  if (!e) return;
  t.open.delete(id);
  e.inbound.end();
  e.outbound.close(new SandboxError('SANDBOX_PROTOCOL', 'sandboxd ended the stream before its end.'));
  e.wake?.();
}

/** The connection is gone: every stream fails with its reason. */
export function failAll(t: TableState, error: SandboxError): void {
  for (const e of t.open.values()) fail(e, error);
  t.open.clear();
}

export const createStreamTable = (options: StreamTableOptions) => {
  const t: TableState = { options, open: new Map() };
  return {
    /**
     * Opens the stream of call `id` (before its request is sent); `cancel` stops that call. `stallMs`
     * overrides the table's for this stream (0: none, for a tunnel that may idle as long as its peers).
     */
    open: (id: number, cancel: () => void, stallMs?: number) => openStream(t, id, cancel, stallMs),
    /** Data frames in flight, for tests and metrics: the number of streams still in the table. */
    get size(): number {
      return t.open.size;
    },
    /** One data frame's payload, in the parts it arrived in (views: no copy of bulk bytes). */
    data: (id: number, payload: Buffer[]): void => receiveData(t, id, payload),
    credit: (id: number, bytes: number): void => receiveCredit(t, id, bytes),
    end: (id: number): void => receiveEnd(t, id),
    /** The call of stream `id` was answered: nothing more may arrive for it, nothing more is sent. */
    answered: (id: number): void => answered(t, id),
    /** The connection is gone: every stream fails with its reason. */
    failAll: (error: SandboxError): void => failAll(t, error),
  };
};

export type StreamTable = ReturnType<typeof createStreamTable>;
