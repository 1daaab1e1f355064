// Code mode's run budgets and who may choose them. A run_code program has two clocks: CPU time
// for its own work, and a wall clock that also counts the time it waits on its tools (a test run,
// a job's output, an approval, a subagent). The service sets defaults and maxima; an agent may ask
// for other values up to the maxima (AgentConfig.codeMode). Invariant: a resolved budget is a
// positive integer number of ms within the maxima; a request over them is refused, never clipped
// silently, when the agent is created, and clipped to them if the maxima shrank since.
import { SandboxError } from '../../errors.ts';

/** An agent's request (every field optional). */
export interface CodeModeRequest {
  /** CPU time of a program's own work, in ms. */
  cpuMs?: number;
  /** Wall-clock time of a run, waiting on tools included, in ms. */
  wallMs?: number;
}

export interface CodeModeBudget {
  cpuMs: number;
  wallMs: number;
}

/**
 * Defaults: 10 s of CPU, and a wall clock of 10 minutes: longer than an approval waits (5 min) or
 * than a 5-minute `bash` timeout, and no longer than a call batch may take (DSH_CALL_TIMEOUT_MS).
 */
export const CODE_MODE_DEFAULTS: Readonly<CodeModeBudget> = Object.freeze({ cpuMs: 10_000, wallMs: 600_000 });
/** Maxima an agent may ask for: 1 minute of CPU, 1 hour of wall clock. */
export const CODE_MODE_MAXIMA: Readonly<CodeModeBudget> = Object.freeze({ cpuMs: 60_000, wallMs: 3_600_000 });

const KEYS = ['cpuMs', 'wallMs'] as const;

/** Refuses a request over the maxima (or not a positive integer) with INVALID_ARGUMENTS. */
export const checkCodeMode = (request: CodeModeRequest | undefined, maxima: CodeModeBudget): void => {
  for (const key of KEYS) {
    const value = request?.[key];
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value <= 0)
      throw new SandboxError('INVALID_ARGUMENTS', `codeMode.${key} must be a positive integer (ms).`);
    if (value > maxima[key])
      throw new SandboxError(
        'INVALID_ARGUMENTS',
        `codeMode.${key} is ${value} ms, over this service's maximum of ${maxima[key]} ms; ask for at most that.`,
      );
  }
};

/** The budget a run gets: the request where valid, else the default; never above the maxima. */
export const resolveCodeMode = (
  defaults: CodeModeBudget,
  maxima: CodeModeBudget,
  request: CodeModeRequest | undefined,
): CodeModeBudget => {
  const pick = (key: (typeof KEYS)[number]): number => {
    const value = request?.[key];
    const wanted = Number.isSafeInteger(value) && (value as number) > 0 ? (value as number) : defaults[key];
    return Math.min(wanted, maxima[key]);
  };
  return { cpuMs: pick('cpuMs'), wallMs: pick('wallMs') };
};
