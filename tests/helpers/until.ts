// Waiting in tests without guessing how long something takes: `until` polls a probe until it
// answers, with a deadline that only guards against a hang (CI machines are loaded and shared, so a
// deadline is generous and never a claim about speed; speed is measured in bench/).

export type UntilOptions = {
  /** What is awaited, for the error on timeout. Default: the probe's source. */
  what?: string;
  /** How long to wait before failing. Default 10 s. */
  timeoutMs?: number;
  /** Pause between probes. Default 10 ms. */
  intervalMs?: number;
};

type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>;

/**
 * Resolves with the probe's first truthy answer; rejects when `timeoutMs` passes without one.
 * A probe that throws fails the wait at once.
 */
export async function until<T>(
  probe: () => T | Promise<T>,
  { what, timeoutMs = 10_000, intervalMs = 10 }: UntilOptions = {},
): Promise<Truthy<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await probe();
    if (answer) return answer as Truthy<T>;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what ?? probe.toString()}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
