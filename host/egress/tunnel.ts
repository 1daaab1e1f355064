// The bytes of one opaque tunnel (a CONNECT of the sandbox's proxy: gateway.connect) between the
// client and the upstream socket the gateway opened, both ways, charged to the tenant's budget as
// they pass (./budget.ts): what the client sends is taken before it is written upstream, so a
// chunk that does not fit is never sent; what the upstream sends is charged as it arrives. At the
// budget both ends are cut at once. Backpressure is pipe()'s: a side that cannot take more pauses
// the other. The hot path only counts: no copy, no allocation per chunk; when the budget must ask
// the central counter (replicas: ./budget-shared.ts, once a chunk of the budget), the client is
// paused until it answers, so bytes keep their order.
// Invariants: the upstream never receives a byte that was not charged first; when either end
// closes or fails, the other is destroyed; an end of one direction ends the other side's writes.
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { BudgetLease } from './budget.ts';

export interface SpliceOptions {
  /** Bytes the client sent with its CONNECT, ahead of the tunnel (sent first, charged like the rest). */
  head?: Buffer;
  /** A tunnel with no bytes either way this long is cut. 0: none. */
  idleMs: number;
  /** Called once when the budget cut the tunnel (for the audit). */
  onCut(): void;
}

export function splice(client: Duplex, upstream: Socket, lease: BudgetLease, options: SpliceOptions): void {
  let cut = false;
  function cutBoth(): void {
    if (cut) return;
    cut = true;
    options.onCut();
    upstream.destroy();
    client.destroy();
  }
  /** Chunks from the client held while the budget asks the central counter, in order. */
  let held: Buffer[] | undefined;
  let endAfterHeld = false;
  function toUpstream(chunk: Buffer): void {
    if (cut) return;
    if (held !== undefined) {
      held.push(chunk);
      return;
    }
    const taken = lease.take(chunk.length);
    if (taken === true) {
      if (!upstream.write(chunk)) client.pause();
    } else if (taken === false) cutBoth();
    else {
      // The central counter is asked (budget-shared.ts): the client waits until it answers, and
      // what it sent meanwhile follows in order.
      held = [chunk];
      client.pause();
      void taken.then((ok) => {
        const chunks = held ?? [];
        held = undefined;
        if (!ok) return cutBoth();
        if (upstream.destroyed) return; // closed meanwhile: its close already ended the client
        upstream.write(chunk);
        for (const next of chunks.slice(1)) toUpstream(next);
        if (endAfterHeld && held === undefined && !cut) {
          endAfterHeld = false;
          upstream.end();
          return;
        }
        // Flowing again unless upstream is full (its drain resumes) or another answer is awaited.
        if (!cut && held === undefined && !upstream.writableNeedDrain) client.resume();
      });
    }
  }
  function toClient(chunk: Buffer): void {
    if (cut) return;
    if (!lease.charge(chunk.length)) cutBoth();
    else if (!client.write(chunk)) upstream.pause();
  }

  if (options.idleMs > 0) upstream.setTimeout(options.idleMs, () => upstream.destroy());
  upstream.on('error', () => client.destroy());
  client.on('error', () => upstream.destroy());
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.destroy());
  client.on('drain', () => upstream.resume());
  upstream.on('drain', () => client.resume());
  // A client that ends while its last bytes wait on the budget's answer ends upstream after them.
  client.on('end', () => {
    if (held === undefined) upstream.end();
    else endAfterHeld = true;
  });
  upstream.on('end', () => client.end());
  if (options.head !== undefined && options.head.length > 0) toUpstream(options.head);
  client.on('data', toUpstream);
  upstream.on('data', toClient);
  // The HTTP server hands over the client paused after its CONNECT; a 'data' listener alone does
  // not start a stream that was paused explicitly.
  // (Unless the head waits on the budget's answer: that answer resumes it.)
  if (held === undefined) client.resume();
  upstream.resume();
}
