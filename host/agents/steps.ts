// An agent's steps: tool sets resolved once and kept for a while, so that a client describes the
// tools and runs its calls against the same set (seed 003: one step-owned set shared by prompt
// assembly and the step's batch, reused by retries). A tool registered, replaced or removed after
// the step is UNKNOWN_TOOL in the step's batches; the rest of the set runs as described.
// Invariants: at most `max` steps per agent (opening one more disposes the oldest); a step expires
// `ttlMs` after it was opened, checked when a batch takes it (a batch already running keeps its
// set); every set is disposed exactly once (expiry, eviction, or the agent's end).
import { nanoid } from 'nanoid';
import { SandboxError } from '../errors.ts';
import type { ResolvedToolSet } from '../tools/index.ts';

/** How long a step may be used. */
export const STEP_TTL_MS = 600_000;
/** Steps one agent holds at once. */
export const MAX_STEPS = 16;

export interface StepOptions {
  /** Default STEP_TTL_MS. */
  ttlMs?: number;
  /** Default MAX_STEPS. */
  max?: number;
  /** Default Date.now. */
  now?: () => number;
}

export interface Steps {
  /** Keeps `set` as a new step; its id and when it expires. */
  open(set: ResolvedToolSet): { id: string; expiresAt: number };
  /** The step's set; STEP_NOT_FOUND when it is unknown or expired. */
  take(id: string): ResolvedToolSet;
  /** Disposes every step's set. */
  dispose(): void;
}

interface Step {
  set: ResolvedToolSet;
  expiresAt: number;
}

export function createSteps(options: StepOptions = {}): Steps {
  const ttlMs = options.ttlMs ?? STEP_TTL_MS;
  const max = options.max ?? MAX_STEPS;
  const now = options.now ?? Date.now;
  /** In opening order, so the first is the oldest. */
  const steps = new Map<string, Step>();

  function drop(id: string, step: Step): void {
    steps.delete(id);
    step.set.dispose();
  }

  function sweep(): void {
    const at = now();
    for (const [id, step] of steps) if (step.expiresAt <= at) drop(id, step);
  }

  return {
    open(set) {
      sweep();
      for (const [id, step] of steps) {
        if (steps.size < max) break;
        drop(id, step);
      }
      const id = `step_${nanoid(16)}`;
      const expiresAt = now() + ttlMs;
      steps.set(id, { set, expiresAt });
      return { id, expiresAt };
    },
    take(id) {
      sweep();
      const step = steps.get(id);
      if (step === undefined) {
        throw new SandboxError(
          'STEP_NOT_FOUND',
          `Step ${id} is unknown or expired (steps last ${Math.round(ttlMs / 1000)} s; an agent keeps its ${max} newest). Open a new step and describe its tools again.`,
          { data: { step: id } },
        );
      }
      return step.set;
    },
    dispose() {
      for (const [id, step] of steps) drop(id, step);
    },
  };
}
