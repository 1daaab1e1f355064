// The idle reaper: stops the sandboxes of agents idle longer than idleMs that have no call in flight
// (a person attached to a terminal is one), no running job and no command running in a terminal.
// The next call restarts them (the provider waits for a stop in progress first).
// Invariants: at most one sweep at a time; an agent is stopped at most once per sweep, and never
// while `inFlight > 0`. It runs on the control plane's side of a node: whether an agent is busy is
// read from its sandboxd session (jobs, terminals), which only the control plane speaks to; the node
// does the stop.

import type { Live } from './session.ts';

/** The per-agent state the reaper reads and writes (the provider's entry). */
export interface Reapable {
  agentId: string;
  live?: Promise<Live>;
  lastUsed: number;
  /** Calls in flight. */
  inFlight: number;
  /** Set while the container is being stopped. */
  stopping?: Promise<void>;
}

export interface ReaperOptions {
  idleMs: number;
  entries: () => Iterable<Reapable>;
  detach: (entry: Reapable) => Promise<void>;
  /** Stops the agent's sandbox (the node's stop()). */
  stop: (agentId: string) => Promise<void>;
  onError: (error: unknown) => void;
}

/** One sweep. Exported for tests; `startReaper` runs it on a timer. */
export const reapIdle = async (o: ReaperOptions): Promise<void> => {
  for (const entry of o.entries()) {
    const idle = (): boolean =>
      entry.inFlight === 0 && !entry.stopping && Date.now() - entry.lastUsed >= o.idleMs;
    if (!entry.live || !idle()) continue;
    try {
      const l = await entry.live;
      if ((await l.session.jobs.list()).some((j) => j.status === 'running')) continue;
      // A command running in a terminal (a dev server, a build) is work in progress too; an idle
      // shell is not: stopping the container ends it, and the next use opens a new one.
      if ((await l.session.terminals?.list())?.some((t) => t.busy)) continue;
      if (!idle()) continue;
      entry.stopping = (async () => {
        await o.detach(entry);
        await o.stop(entry.agentId);
      })().finally(() => {
        entry.stopping = undefined;
      });
      await entry.stopping;
    } catch (e) {
      o.onError(e);
    }
  }
};

/** Sweeps every min(idleMs/2, 30 s) (at least 250 ms); idleMs 0 disables it. Returns a stopper. */
export const startReaper = (o: ReaperOptions): (() => void) => {
  if (o.idleMs <= 0) return () => {};
  let sweeping = false;
  const timer = setInterval(
    () => {
      if (sweeping) return;
      sweeping = true;
      void reapIdle(o).finally(() => {
        sweeping = false;
      });
    },
    Math.max(250, Math.min(o.idleMs / 2, 30_000)),
  );
  timer.unref();
  return () => clearInterval(timer);
};
