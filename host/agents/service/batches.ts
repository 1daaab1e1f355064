// Call batches: an agent's calls run through its tool scope as one batch, tracked so that delete()
// can abort the agent's batches and close() can let them finish for a grace period and then abort
// the rest. Invariants: results come back in call order; calls a delete or a shutdown aborted say
// so (the agent was deleted / the service shut down) instead of a bare ABORTED; progress
// subscribers hear the batch's last events before the results are returned. interrupt() aborts an
// agent's batches for interrupt_agent; their calls say who interrupted them.
import { SandboxError } from '../../errors.ts';
import type { EventLog } from '../../store/types.ts';
import type { ToolCall, ToolResult } from '../../tools/types.ts';
import { trackBatch } from '../progress.ts';
import type { Agent, CallOptions } from '../types.ts';
import type { LiveAgents } from './live.ts';
import { type DeletionMarks, deletedError } from './records.ts';

const SHUTDOWN = 'SHUTTING_DOWN';
const DELETED = 'AGENT_DELETED';
const MOVED = 'FAMILY_MOVED';

export interface Batches {
  call(agent: Agent, calls: ToolCall[], options: CallOptions): Promise<ToolResult[]>;
  /** Aborts the agent's batches now for interrupt_agent (`by` interrupted it); returns how many. */
  interrupt(agentId: string, by: string): number;
  /** Whether a batch of the agent runs now. */
  busy(agentId: string): boolean;
  /** The agents with a batch running now (deletion.ts re-checks them after missed wake-ups). */
  agents(): string[];
  /** The agent's batches running now and when its last batch started or ended here (epoch ms). */
  activity(agentId: string): { batches: number; lastCallAt?: number };
  /** Aborts the agent's batches now; resolves when they settled or after `graceMs`. */
  abortAgent(agentId: string, graceMs: number): Promise<void>;
  /** Replicas: aborts the agent's batches now, its family being run by another replica (OWNER_FENCED). */
  abortMoved(agentId: string): number;
  /** Lets every batch finish for `graceMs`, then aborts the rest and resolves when all settled. */
  drain(graceMs: number): Promise<void>;
  size(): number;
}

export interface BatchesOptions {
  events: EventLog;
  live: LiveAgents;
  marks: DeletionMarks;
  isClosing: () => boolean;
  /** Told about every settled root result; `remote` marks client-defined tool names. */
  observe?: (result: ToolResult, remote: boolean) => void;
}

interface Batch {
  agentId: string;
  controller: AbortController;
  done: Promise<unknown>;
}

/** Resolves when `work` settled or after `ms`, whichever comes first. */
async function settledWithin(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

type ErrorCode = NonNullable<ToolResult['error']>['code'];

function abortedAs(result: ToolResult, code: ErrorCode, message: string): ToolResult {
  const aborted = result.error?.code;
  if (aborted !== 'ABORTED' && aborted !== 'ABORTED_BEFORE_DISPATCH') return result;
  return { ...result, content: [{ type: 'text', text: `Error: ${message}` }], error: { code, message } };
}

function movedResult(result: ToolResult): ToolResult {
  const message =
    'Another replica runs this agent now; the call was stopped here and its result is not in the log. Retry the batch with the same Idempotency-Key.';
  return abortedAs(result, 'OWNER_FENCED', message);
}

function shutdownResult(result: ToolResult): ToolResult {
  const message = 'The service shut down before this call finished; retry it after the restart.';
  return abortedAs(result, 'SHUTTING_DOWN', message);
}

/** The abort reason of an interrupted batch: who interrupted it. */
class Interrupted {
  readonly by: string;
  constructor(by: string) {
    this.by = by;
  }
}

function interruptedResult(result: ToolResult, by: string): ToolResult {
  const message = `Agent ${by} interrupted this agent (interrupt_agent); the call was stopped.`;
  return abortedAs(result, 'ABORTED', message);
}

function deletedResult(result: ToolResult): ToolResult {
  const message = 'The agent was deleted while this call ran; it was stopped.';
  return abortedAs(result, result.error?.code ?? 'ABORTED', message);
}

export function createBatches(options: BatchesOptions): Batches {
  const { events, live, marks } = options;
  const running = new Set<Batch>();
  /** Batches running per agent (only agents with one), for activity() on long lists. */
  const perAgent = new Map<string, number>();
  /** When each agent's last batch started or ended in this process. */
  const lastCall = new Map<string, number>();

  function count(agentId: string, by: number): void {
    const n = (perAgent.get(agentId) ?? 0) + by;
    if (n > 0) perAgent.set(agentId, n);
    else perAgent.delete(agentId);
    // A deleted agent's time is forgotten (abortAgent), not set again by its last batch ending.
    if (!marks.deleting.has(agentId)) lastCall.set(agentId, Date.now());
  }

  async function call(agent: Agent, calls: ToolCall[], { signal, onProgress, step }: CallOptions) {
    if (options.isClosing())
      throw new SandboxError(
        'SHUTTING_DOWN',
        'The service is shutting down; retry the calls after it restarts.',
      );
    if (await marks.gone(agent)) throw deletedError(agent.id);
    const state = await live.of(agent);
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) controller.abort(signal.reason);
    const untrack = onProgress ? trackBatch(events, agent.sessionId, calls, onProgress) : undefined;
    // A round of the agent's goal is one batch (goal.ts); a full log refuses the calls below anyway.
    try {
      await state.session.startRound();
    } catch {
      // Counting never fails a batch.
    }
    const work = state.tools.execute(calls, controller.signal, undefined, step);
    const entry: Batch = { agentId: agent.id, controller, done: work.catch(() => undefined) };
    running.add(entry);
    count(agent.id, 1);
    try {
      let results = await work;
      if (controller.signal.reason === SHUTDOWN) results = results.map(shutdownResult);
      if (controller.signal.reason === DELETED) results = results.map(deletedResult);
      if (controller.signal.reason === MOVED) results = results.map(movedResult);
      const reason: unknown = controller.signal.reason;
      if (reason instanceof Interrupted) results = results.map((r) => interruptedResult(r, reason.by));
      for (const result of results) options.observe?.(result, state.remote.has(result.name));
      return results;
    } finally {
      running.delete(entry);
      count(agent.id, -1);
      signal.removeEventListener('abort', onAbort);
      // Subscribers hear an event once its batch is written; let the batch's last ones through.
      if (untrack !== undefined) await events.flush().catch(() => undefined);
      untrack?.();
    }
  }

  function abortAgent(agentId: string, graceMs: number): Promise<void> {
    const batches = [...running].filter((b) => b.agentId === agentId);
    for (const batch of batches) batch.controller.abort(DELETED);
    lastCall.delete(agentId); // the agent is deleted
    return settledWithin(Promise.all(batches.map((b) => b.done)), graceMs);
  }

  function abortMoved(agentId: string): number {
    const batches = [...running].filter((b) => b.agentId === agentId && !b.controller.signal.aborted);
    for (const batch of batches) batch.controller.abort(MOVED);
    return batches.length;
  }

  function interrupt(agentId: string, by: string): number {
    const batches = [...running].filter((b) => b.agentId === agentId && !b.controller.signal.aborted);
    for (const batch of batches) batch.controller.abort(new Interrupted(by));
    return batches.length;
  }

  async function drain(graceMs: number): Promise<void> {
    const all = Promise.all([...running].map((r) => r.done));
    await settledWithin(all, graceMs);
    for (const batch of running) batch.controller.abort(SHUTDOWN);
    await all;
  }

  return {
    call,
    interrupt,
    busy: (agentId) => perAgent.has(agentId),
    agents: () => [...perAgent.keys()],
    activity(agentId) {
      const at = lastCall.get(agentId);
      return { batches: perAgent.get(agentId) ?? 0, ...(at === undefined ? {} : { lastCallAt: at }) };
    },
    abortAgent,
    abortMoved,
    drain,
    size: () => running.size,
  };
}
