// The idle reaper: stops the sandboxes of agents idle longer than idleMs that have no call in flight
// (a person attached to a terminal is one), no running job and no command running in a terminal.
// The next call restarts them (the provider waits for a stop in progress first). An agent whose
// tenant asks for idle pauses (IdlePauses.afterMs) is paused after that tenant's idle time instead,
// through IdlePauses.pause (the agent service's, which records the pause), on the same conditions.
// Invariants: at most one sweep at a time; an agent is stopped or paused at most once per sweep,
// and never while `inFlight > 0`. It runs on the control plane's side of a node: whether an agent
// is busy is read from its sandboxd session (jobs, terminals), which only the control plane speaks
// to, and so is the idle-pause policy; the node does the stop (or the pause).

import type { IdlePauses } from '../types.ts';
import type { Live } from './session.ts';

/** The per-agent state the reaper reads and writes (the provider's entry). */
export interface Reapable {
  agentId: string;
  /** Its tenant, for the tenant's idle pauses; unknown for a sandbox the node could not tell. */
  tenantId?: string | undefined;
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
  /** The tenants' idle pauses, once the agent service has set them (read at every sweep). */
  pauses?: () => IdlePauses | undefined;
}

/** How long the entry may stay idle, and whether it is then paused (its tenant's setting) or stopped. */
function limitOf(o: ReaperOptions, entry: Reapable): { ms: number; pause: boolean } | undefined {
  const pauses = o.pauses?.();
  const tenantMs = entry.tenantId === undefined ? undefined : pauses?.afterMs(entry.tenantId);
  // Never later than the service's own idle stop: a tenant cannot keep containers running longer.
  if (tenantMs !== undefined)
    return { ms: o.idleMs > 0 ? Math.min(tenantMs, o.idleMs) : tenantMs, pause: true };
  return o.idleMs > 0 ? { ms: o.idleMs, pause: false } : undefined;
}

/** Whether the sandbox has work of its own going on: a running job, or a command in a terminal. */
async function working(entry: Reapable): Promise<boolean> {
  const l = await (entry.live as Promise<Live>);
  if ((await l.session.jobs.list()).some((j) => j.status === 'running')) return true;
  // A command running in a terminal (a dev server, a build) is work in progress too; an idle
  // shell is not: stopping the container ends it, and the next use opens a new one.
  return (await l.session.terminals?.list())?.some((t) => t.busy) === true;
}

/** One sweep. Exported for tests; `startReaper` runs it on a timer. */
export const reapIdle = async (o: ReaperOptions): Promise<void> => {
  for (const entry of o.entries()) {
    if (!entry.live) continue;
    const limit = limitOf(o, entry);
    if (limit === undefined) continue;
    const idle = (): boolean =>
      entry.inFlight === 0 && !entry.stopping && Date.now() - entry.lastUsed >= limit.ms;
    if (!entry.live || !idle()) continue;
    try {
      if ((await working(entry)) || !idle()) continue;
      const pauses = o.pauses?.();
      if (limit.pause && pauses !== undefined) {
        await pauses.pause(entry.agentId);
        continue;
      }
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

/** Idle pauses are looked for at least this often, whatever idleMs (a tenant's idle time may be short). */
const PAUSE_SWEEP_MS = 5_000;

/**
 * Sweeps every min(idleMs/2, 30 s) (at least 250 ms), or every 5 s at most when idle pauses may
 * apply; idleMs 0 without `pauses` disables it. Returns a stopper.
 */
export const startReaper = (o: ReaperOptions): (() => void) => {
  if (o.idleMs <= 0 && o.pauses === undefined) return () => {};
  const stopEvery = o.idleMs > 0 ? Math.min(o.idleMs / 2, 30_000) : PAUSE_SWEEP_MS;
  let sweeping = false;
  const timer = setInterval(
    () => {
      if (sweeping) return;
      sweeping = true;
      void reapIdle(o).finally(() => {
        sweeping = false;
      });
    },
    Math.max(250, o.pauses === undefined ? stopEvery : Math.min(stopEvery, PAUSE_SWEEP_MS)),
  );
  timer.unref();
  return () => clearInterval(timer);
};
