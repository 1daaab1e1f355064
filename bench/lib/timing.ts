// Timing helpers the lifecycle benches share (snapshot, rollback, bash-snapshot): the median of a
// sample (the mean of the middle two for an even count) and the wall time of one awaited step.

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

/** Milliseconds `fn` took, awaited. */
export const timed = async (fn: () => Promise<unknown>): Promise<number> => {
  const t = performance.now();
  await fn();
  return performance.now() - t;
};
