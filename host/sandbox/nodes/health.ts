// Which nodes answer (docs/nodes.md, "Faults"), for placement (./placement.ts): a node is marked
// unreachable when a probe or a call of one of its agents finds it silent, and reachable again when
// a probe gets its capacity. A probe is the node's capacity() (its node agent and its engine both
// answer it), every `probeMs` and at once after a call on the node failed.
// Invariants: a node marked unreachable is called no more for its agents (their calls fail at once
// with NODE_UNREACHABLE naming it) until a probe sees it answer; without the periodic probe no mark
// is kept (each call tries the node, and a failure probes it); probes of one node never overlap;
// the probe after a failed call began after the failure (one already running does not answer for it);
// a probe gives up after `answerMs`; the timer never holds the process open.

import { SandboxError } from '../../errors.ts';
import type { NodeCapacity, SandboxNode } from './types.ts';

export interface NodeDown {
  /** When it was first found silent (epoch ms). */
  since: number;
  /** What the failing probe or call said. */
  error: string;
}

export interface NodeHealth {
  /** The node's outage, when it is marked unreachable. */
  down(name: string): NodeDown | undefined;
  /** Throws NODE_UNREACHABLE naming the node when it is marked unreachable. */
  check(name: string): void;
  /**
   * After a call on the node failed with `error`: probes it now; when it does not answer, marks it
   * unreachable and gives NODE_UNREACHABLE (its cause the error), else the error as it was.
   */
  failed(node: SandboxNode<unknown>, error: unknown): Promise<unknown>;
  /** Probes the node (its capacity, or undefined when it did not answer). */
  probe(node: SandboxNode<unknown>): Promise<NodeCapacity | undefined>;
  close(): void;
}

export interface NodeHealthOptions {
  /** Probe every node this often; 0: only after failed calls. */
  probeMs: number;
  answerMs: number;
  /** A probe's answer (placement caches the capacity it read). */
  onCapacity(name: string, capacity: NodeCapacity): void;
  onChange?(name: string, down: NodeDown | undefined): void;
}

export const unreachableError = (name: string, down: NodeDown, cause?: unknown): SandboxError =>
  new SandboxError(
    'NODE_UNREACHABLE',
    `Node ${name} is unreachable (since ${new Date(down.since).toISOString()}: ${down.error}); its agents work again when it is back.`,
    { data: { node: name, since: down.since }, ...(cause === undefined ? {} : { cause }) },
  );

/** A transport failure, or an engine the node cannot reach: worth a probe. */
const suspicious = (e: unknown): boolean =>
  e instanceof SandboxError && (e.code === 'NODE_UNREACHABLE' || e.code === 'SANDBOX_UNAVAILABLE');

export function createNodeHealth(members: SandboxNode<unknown>[], options: NodeHealthOptions): NodeHealth {
  const outages = new Map<string, NodeDown>();
  const probing = new Map<string, Promise<NodeCapacity | undefined>>();
  const mark = (name: string, error: string | undefined): void => {
    const was = outages.get(name);
    if (error === undefined) {
      if (was === undefined) return;
      outages.delete(name);
      options.onChange?.(name, undefined);
    } else if (was === undefined) {
      const down = { since: Date.now(), error };
      outages.set(name, down);
      options.onChange?.(name, down);
    }
  };
  const probe = (node: SandboxNode<unknown>): Promise<NodeCapacity | undefined> => {
    const running = probing.get(node.name);
    if (running !== undefined) return running;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer within ${options.answerMs} ms`)),
        options.answerMs,
      );
    });
    const p = Promise.race([node.capacity(), late])
      .then(
        (capacity) => {
          mark(node.name, undefined);
          options.onCapacity(node.name, capacity);
          return capacity;
        },
        (e: unknown) => {
          mark(node.name, e instanceof Error ? e.message : String(e));
          return undefined;
        },
      )
      .finally(() => {
        clearTimeout(timer);
        probing.delete(node.name);
      });
    probing.set(node.name, p);
    return p;
  };
  // A probe that begins now: one already running began before the call failed and has not seen
  // what happened since, so its answer does not count (unless it found the node silent).
  const probeNow = async (node: SandboxNode<unknown>): Promise<void> => {
    const running = probing.get(node.name);
    if (running !== undefined) {
      await running;
      if (outages.has(node.name)) return;
    }
    await probe(node);
  };
  const timer =
    options.probeMs > 0
      ? setInterval(() => {
          for (const n of members) void probe(n);
        }, options.probeMs).unref()
      : undefined;
  return {
    down: (name) => outages.get(name),
    check(name) {
      const down = outages.get(name);
      if (down !== undefined) throw unreachableError(name, down);
    },
    async failed(node, error) {
      if (!suspicious(error)) return error;
      await probeNow(node);
      const down = outages.get(node.name);
      // Without the periodic probe nothing would clear the mark: each call tries the node again.
      if (options.probeMs <= 0) outages.delete(node.name);
      return down === undefined ? error : unreachableError(node.name, down, error);
    },
    probe,
    close: () => clearInterval(timer),
  };
}
