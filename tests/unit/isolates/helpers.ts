// Shared fixtures for the isolate host tests: a real host (real worker processes, real isolated-vm)
// that is warmed up before the first test and always closed after the last.

import type {
  IsolateHost,
  IsolateHostOptions,
  JsonValue,
  RunOutcome,
  RunRequest,
} from '../../../host/isolates/index.ts';
import { createIsolateHost } from '../../../host/isolates/index.ts';

export const echo = async (name: string, args: JsonValue): Promise<JsonValue> => ({ name, args });

export const startHost = async (options: IsolateHostOptions = {}): Promise<IsolateHost> => {
  const host = createIsolateHost({ workers: 1, prewarm: 1, ...options });
  // Wait until every worker answers (first start loads isolated-vm and esbuild).
  await Promise.all(
    Array.from({ length: options.workers ?? 1 }, () =>
      host.run({ code: 'return 1', bindings: [], onCall: echo }),
    ),
  );
  return host;
};

export type RunInput = Partial<RunRequest> & { code: string };

export const runner =
  (host: () => IsolateHost) =>
  (input: RunInput): Promise<RunOutcome> =>
    host().run({ bindings: ['echo'], onCall: echo, ...input });

export const failure = (outcome: RunOutcome): { kind: string; message: string } => {
  if (outcome.ok) throw new Error(`expected a failure, got ${JSON.stringify(outcome.value)}`);
  return { kind: outcome.kind, message: outcome.message };
};

export const value = (outcome: RunOutcome): JsonValue | undefined => {
  if (!outcome.ok) throw new Error(`run failed (${outcome.kind}): ${outcome.message}`);
  return outcome.value;
};

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** True while a process with this pid exists. */
export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * Starts `hog` (its tool calls are echoed), waits until it made its first call (plus `settleMs`),
 * then runs three quick programs with a call each: what other users see of a worker busy with
 * somebody's program. `finished` records the order in which the runs ended.
 */
export const hogThenQuick = async (
  run: (input: RunInput) => Promise<RunOutcome>,
  hog: RunInput,
  settleMs = 0,
): Promise<{ hog: Promise<RunOutcome>; quick: RunOutcome[]; finished: string[] }> => {
  const finished: string[] = [];
  let called = (): void => undefined;
  const firstCall = new Promise<void>((resolve) => (called = resolve));
  const hogRun = run({
    ...hog,
    onCall: async (name, args) => {
      called();
      return echo(name, args);
    },
  }).then((outcome) => {
    finished.push('hog');
    return outcome;
  });
  await firstCall;
  if (settleMs > 0) await sleep(settleMs);
  const quick = await Promise.all(
    [1, 2, 3].map((i) =>
      run({ code: `return (await tools.echo({ i: ${i} })).args.i` }).then((outcome) => {
        finished.push(`quick${i}`);
        return outcome;
      }),
    ),
  );
  return { hog: hogRun, quick, finished };
};

/**
 * How a spinning program's end reads: its CPU budget, or, on a machine so loaded that an inline
 * stretch took INLINE_WAIT_FACTOR x the budget left without getting that much CPU, as starved
 * (host/isolates/worker-run.ts). Either way long before the wall clock.
 */
export const cpuTimeoutMessage = (cpuMs: number): RegExp =>
  new RegExp(
    `^(the program used more than ${cpuMs} ms of CPU time|the machine was too busy for the program: )`,
  );
