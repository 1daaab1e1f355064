// Child runs: a child's work is run by the client, asked for by a host request (a `subagent`
// request on the parent's session to start it, an `agent_wakeup` request on its own session to
// continue it). The run's state (host/store/teams.ts) says where it stands; a watch on the pending
// request settles it when the client answers, the request expires or is cancelled. Settling
// announces the outcome to the parent: an `agent.child_finished` event on its log, a `report` item
// in its mailbox (so wait_agent wakes), and any foreground call waiting on it.
// Invariants: a run settles once per request (the store compares the request id), so a report
// followed by the request's own answer announces once; after a restart, resume() watches every run
// still pending, so no outcome is lost (with replicas, only the families the replica takes over:
// settling appends to the parent's session, which only its family's owner may write); watches end
// with close() without cancelling anything; a report posted while the parent was deleted is
// cancelled (no unread mail outlives its recipient).
import * as v from 'valibot';
import type { HostRequest, RequestStore } from '../requests/index.ts';
import type { AgentStore, ChildRun, ChildStatus, EventLog, TeamStore } from '../store/index.ts';
import type { Mailboxes } from './mailboxes.ts';

export interface Outcome {
  status: ChildStatus;
  output?: string;
}

export interface Runs {
  /** Watches a pending run request of `childId` until it settles. */
  watch(childId: string, request: HostRequest): void;
  /** Settles the child's run (if it is still on `requestId`; undefined: any) and announces it. */
  settle(childId: string, requestId: string | undefined, outcome: Outcome): Promise<boolean>;
  /**
   * Stores a report of a child whose run was not pending (it continued on its own) and announces it;
   * MAILBOX_FULL, changing nothing, when the parent has not read this child's last reports.
   */
  reportIdle(run: ChildRun, output: string): Promise<void>;
  /** Resolves with the run once it is no longer running; rejects when `signal` aborts. */
  outcome(childId: string, signal: AbortSignal): Promise<ChildRun>;
  /**
   * Watches every run left pending by the last process (with `agentIds`, only the runs of those
   * children or parents: a family a replica takes over); resolves to how many.
   */
  resume(agentIds?: ReadonlySet<string>): Promise<number>;
  close(): void;
}

export interface RunsOptions {
  agents: Pick<AgentStore, 'byId'>;
  events: Pick<EventLog, 'append'>;
  requests: RequestStore;
  teams: TeamStore;
  mailboxes: Mailboxes;
}

const Text = v.union([
  v.string(),
  v.pipe(
    v.object({ text: v.string() }),
    v.transform((o) => o.text),
  ),
]);

/** What a settled run request means for the run. */
export function outcomeOf(request: HostRequest): Outcome {
  switch (request.state) {
    case 'answered': {
      const answer = (request.answer ?? {}) as { result?: unknown; output?: unknown; error?: unknown };
      if (answer.error !== undefined) {
        const error = answer.error as string | { message?: string };
        const message = typeof error === 'string' ? error : (error.message ?? '');
        return { status: 'failed', output: `The client reported an error: ${message || 'no reason given'}` };
      }
      const text = v.safeParse(Text, 'result' in answer ? answer.result : answer.output);
      return text.success ? { status: 'completed', output: text.output } : { status: 'completed' };
    }
    case 'expired':
      return { status: 'failed', output: 'Nobody ran the child before its request expired.' };
    case 'cancelled':
      return { status: 'cancelled' };
    default:
      return { status: 'running' };
  }
}

/** Resolves with the run once it is no longer running (announce() resolves `waiting`). */
function settledRun(
  waiting: Map<string, Set<(run: ChildRun) => void>>,
  teams: TeamStore,
  childId: string,
  signal: AbortSignal,
): Promise<ChildRun> {
  return new Promise<ChildRun>((resolve, reject) => {
    // Waiting before the run is read, so an announce landing while the read is in flight counts.
    const set = waiting.get(childId) ?? new Set();
    waiting.set(childId, set);
    const leave = () => {
      signal.removeEventListener('abort', onAbort);
      set.delete(done);
      if (set.size === 0 && waiting.get(childId) === set) waiting.delete(childId);
    };
    const onAbort = () => {
      leave();
      reject(signal.reason);
    };
    const done = (settled: ChildRun) => {
      leave();
      resolve(settled);
    };
    set.add(done);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    teams.run(childId).then(
      (run) => {
        if (run !== undefined && run.status !== 'running') done(run);
      },
      (error: unknown) => {
        leave();
        reject(error);
      },
    );
  });
}

export function createRuns(options: RunsOptions): Runs {
  const { agents, events, requests, teams, mailboxes } = options;
  const stop = new AbortController();
  const waiting = new Map<string, Set<(run: ChildRun) => void>>();

  function watch(childId: string, request: HostRequest): void {
    requests
      .wait(request.id, stop.signal)
      .then(
        (settled) => settle(childId, request.id, outcomeOf(settled)),
        () => false, // the service is closing: the next start resumes the watch
      )
      // The store failed to settle it: the run stays running on this request, so the next
      // start's resume() settles it from the request.
      .catch(() => undefined);
  }

  /** The `report` item telling the parent what `childId` said; MAILBOX_FULL when its room is full. */
  async function notice(run: ChildRun, name: string | undefined): Promise<void> {
    await mailboxes.post(
      {
        tenantId: run.tenantId,
        agentId: run.parentId,
        fromId: run.agentId,
        kind: 'report',
        body: run.output ?? `(${run.status}, no output)`,
      },
      name,
      { clip: true },
    );
    // The parent was read live before the post, but its deletion may have cancelled its mail
    // since: read after the write, so whichever comes second sees the other.
    if ((await agents.byId(run.parentId)) === undefined) await teams.cancelPending(run.parentId);
  }

  /** Tells waiters, the parent's log and (unless `posted` already) its mailbox how the run stands. */
  async function announce(childId: string, posted = false): Promise<void> {
    const run = await teams.run(childId);
    if (run === undefined) return;
    for (const resolve of waiting.get(childId) ?? []) resolve(run);
    waiting.delete(childId);
    const parentId = run.parentId;
    const [child, parent] = await Promise.all([agents.byId(childId), agents.byId(parentId)]);
    if (parent === undefined) return; // deleted with (or before) its child
    const data = {
      agentId: childId,
      ...(child?.links?.name === undefined ? {} : { name: child.links.name }),
      status: run.status,
      ...(run.output === undefined ? {} : { output: run.output }),
    };
    events
      .append([{ sessionId: parentId, type: 'agent.child_finished', surface: 'current', data }])
      .catch(() => {
        // A parent's log over its budget misses the entry; its mailbox still says it.
      });
    if (posted) return;
    try {
      await notice(run, child?.links?.name);
    } catch {
      // Messages cannot fill a report's room (mailboxes.ts): only this child's own unread reports
      // can, and then the event and the run's state keep the outcome.
    }
  }

  async function settle(childId: string, requestId: string | undefined, outcome: Outcome): Promise<boolean> {
    if (outcome.status === 'running') return false;
    const changed = await teams.settleRun(childId, requestId, outcome);
    if (changed) await announce(childId);
    return changed;
  }

  async function reportIdle(run: ChildRun, output: string): Promise<void> {
    const { requestId: _r, updatedAt: _u, ...rest } = run;
    const next = { ...rest, status: 'completed' as const, output };
    const [parent, child] = await Promise.all([agents.byId(run.parentId), agents.byId(run.agentId)]);
    // Queued before anything changes: a child that left its room full of unread reports is told
    // (MAILBOX_FULL) instead of its report vanishing.
    if (parent !== undefined) await notice({ ...next, updatedAt: run.updatedAt }, child?.links?.name);
    await teams.putRun(next);
    await announce(run.agentId, true);
  }

  async function resume(agentIds?: ReadonlySet<string>): Promise<number> {
    let watched = 0;
    let failure: { error: unknown } | undefined;
    for (const run of await teams.runsWith('running')) {
      if (run.requestId === undefined) continue;
      if (agentIds !== undefined && !agentIds.has(run.agentId) && !agentIds.has(run.parentId)) continue;
      // One run the store fails on must not leave the runs after it unwatched; the first failure
      // is thrown once every run was tried (the run stays running, for the next start).
      try {
        const request = await requests.get(run.requestId);
        if (request === undefined) await settle(run.agentId, run.requestId, { status: 'cancelled' });
        else if (request.state !== 'pending') await settle(run.agentId, run.requestId, outcomeOf(request));
        else {
          watch(run.agentId, request);
          watched++;
        }
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure !== undefined) throw failure.error;
    return watched;
  }

  return {
    watch,
    settle,
    reportIdle,
    outcome: (childId, signal) => settledRun(waiting, teams, childId, signal),
    resume,
    close: () => stop.abort(),
  };
}
