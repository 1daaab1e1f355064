// The operator's bound on a frozen pause (DSH_FREEZE_MAX_SECONDS): a freeze keeps the agent's
// processes and so holds their memory on its node with no end of its own; past the bound the
// agent is stopped instead (pause.ts stopFrozen: its processes, /tmp, terminals and jobs lost, its
// workspace kept, its pause then a `stop` one since the same moment). A sweep pages through the
// agents that have a sandbox (AgentStore.withSandbox) and stops each frozen longer than the bound.
// Invariants: one sweep at a time; with replicas only the family's owner stops one (`mayStop`);
// an agent resumed or paused again meanwhile is left as it is (stopFrozen reads its pause again
// under its sandbox's hold); a failure of one agent is reported and the sweep goes on.
import type { AgentRecord, AgentStore } from '../../store/index.ts';

export interface FreezeBoundOptions {
  agents: Pick<AgentStore, 'withSandbox'>;
  /** The longest a freeze lasts (ms); 0: no bound. */
  maxMs: number;
  now: () => number;
  /** Stops an agent frozen since `at`, unless its pause changed meanwhile. */
  stopFrozen: (record: AgentRecord, at: number) => Promise<void>;
  /** With replicas: whether this one runs the agent's family (default: yes). */
  mayStop?: (tenantId: string, agentId: string) => Promise<boolean>;
  onError?: (error: unknown) => void;
}

const PAGE = 500;

/** One sweep: every agent frozen longer than the bound, stopped. Exported for tests. */
export async function stopLongFrozen(o: FreezeBoundOptions): Promise<void> {
  let after = '';
  for (;;) {
    const page = await o.agents.withSandbox(after, PAGE);
    for (const record of page) {
      const pause = record.paused;
      if (pause?.mode !== 'freeze' || o.now() - pause.at < o.maxMs) continue;
      try {
        if ((await o.mayStop?.(record.tenantId, record.id)) === false) continue;
        await o.stopFrozen(record, pause.at);
      } catch (e) {
        o.onError?.(e);
      }
    }
    const last = page.at(-1);
    if (page.length < PAGE || last === undefined) return;
    after = last.id;
  }
}

/**
 * Sweeps every quarter of the bound (at least 100 ms, at most a minute), so a freeze ends at most
 * a quarter of the bound (or a minute) past it; maxMs 0 starts nothing. Returns a stopper.
 */
export function startFreezeBound(o: FreezeBoundOptions): () => void {
  if (o.maxMs <= 0) return () => {};
  let sweeping = false;
  const timer = setInterval(
    () => {
      if (sweeping) return;
      sweeping = true;
      void stopLongFrozen(o)
        .catch((e: unknown) => o.onError?.(e))
        .finally(() => {
          sweeping = false;
        });
    },
    Math.min(60_000, Math.max(100, o.maxMs / 4)),
  );
  timer.unref();
  return () => clearInterval(timer);
}
