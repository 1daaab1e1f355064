// sandboxd's end of streams (sandbox-wire/streams.ts): per call that moves bulk bytes, the credit
// the host granted for what we send, and the queue of what the host sends us with the credit we
// granted for it. A stream is named by its call's id and lives as long as its handler runs (or until
// the call is cancelled or a new session starts).
// Invariants: we send data frames only within the host's credit and only while our stdout holds
// about one frame, so answers of other calls queue behind that much, not behind the file; we hold
// at most the window we granted per incoming stream (RECEIVE_WINDOW_BYTES): data past it, or after its
// end, fails that stream (logged), never the process; data for a stream we do not know is dropped.
// This module wires the streams and takes the host's credit, data and ends; stream-open.ts opens
// one stream (its Sender and Receiver).

import { WireError } from '../../sandbox-wire/errors.ts';
import { FlowError } from '../../sandbox-wire/streams.ts';
import { abortError, failIncoming, openStream, type StreamOutput, type StreamsState } from './stream-open.ts';

export type { Receiver, Sender, StreamOutput } from './stream-open.ts';

export const createStreams = (options: { log: (line: string) => void }) => {
  const state: StreamsState = { outgoing: new Map(), incoming: new Map() };
  const { outgoing, incoming } = state;

  return {
    open: (id: number, signal: AbortSignal, output: StreamOutput, receives: boolean) =>
      openStream(state, id, signal, output, receives),
    onCredit(id: number, bytes: unknown): void {
      const out = outgoing.get(id);
      if (!out) return; // a late grant for a stream that already ended
      try {
        out.grant(bytes);
      } catch (e) {
        options.log(`stream ${id}: ${(e as Error).message}; stopped`);
        out.close(new WireError('INVALID_ARGUMENTS', (e as Error).message));
      }
    },
    onEnd(id: number): void {
      const s = incoming.get(id);
      if (!s) return;
      s.flow.end();
      s.wake?.();
    },
    /** One data frame's payload, in the parts it arrived in (protocol.ts onData). */
    onData(id: number, payload: Buffer[]): void {
      const s = incoming.get(id);
      if (!s) {
        options.log(`data for unknown stream ${id} dropped`);
        return;
      }
      if (s.failure) return;
      let bytes = 0;
      for (const part of payload) bytes += part.length;
      try {
        s.flow.received(bytes);
      } catch (e) {
        if (!(e instanceof FlowError)) throw e;
        options.log(`stream ${id}: ${e.message}; stopped`);
        failIncoming(
          state,
          id,
          new WireError('INVALID_ARGUMENTS', `The host broke flow control: ${e.message}.`),
        );
        return;
      }
      if (bytes === 0) return;
      s.queue.push(...payload);
      s.wake?.();
    },
    /** A new session: every stream of the previous one is gone. */
    closeAll(): void {
      for (const out of outgoing.values()) out.close(abortError());
      for (const id of incoming.keys()) failIncoming(state, id, abortError());
      outgoing.clear();
      incoming.clear();
    },
  };
};

export type Streams = ReturnType<typeof createStreams>;
