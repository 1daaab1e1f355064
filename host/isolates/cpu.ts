// CPU time of isolates as it really is. isolated-vm's `cpuTime` (and an entry's `timeout`) count
// the time an isolate is entered on a thread, in wall-clock time with the prebuilt binaries:
// measured on Linux x64, an entry that sleeps 1.5 s in Atomics.wait counted 1.5 s of `cpuTime`
// for 0.8 ms of process CPU, and a loop of 1 s of CPU counted 2.1 s while another process shared
// its core. So a budget on `cpuTime` charges a well-behaved isolate for other processes' load.
// What the process really used is known: all its threads (process.cpuUsage) less the event-loop
// thread's own (process.threadCpuUsage), which runs no isolate. Each poll shares that among the
// isolates entered since the last poll, in proportion to their entered time, and never charges
// one more than its entered time. Exact for one isolate entered at a time and for several that
// compete for cores alike (the scheduler shares cores fairly); an isolate blocked inside an entry
// without using a core is charged a share of the others' work (too much, never too little).
// Invariant: the charges of one poll add up to at most the CPU the process's other threads used.

/** An isolate (a run, a plugin) whose CPU a worker meters. */
export interface Metered {
  /** Time its isolate was entered since the previous sample, in ns (isolated-vm's `cpuTime` delta). */
  sample(): number;
  /** The CPU its isolate used in that time, in ns. */
  charge(cpuNs: number): void;
}

/** CPU the process used so far, in µs: all its threads, and the event-loop thread alone. */
export type CpuUsage = () => { all: number; loop: number };

const processUsage: CpuUsage = () => {
  const all = process.cpuUsage();
  const loop = process.threadCpuUsage();
  return { all: all.user + all.system, loop: loop.user + loop.system };
};

/**
 * A meter for one worker process: call it every poll with every live isolate; each is sampled,
 * then charged its share of what the process's isolate threads used since the previous call.
 */
export const createCpuMeter = (usage: CpuUsage = processUsage): ((live: Iterable<Metered>) => void) => {
  let last = usage();
  return (live) => {
    const items = [...live];
    const entered = items.map((item) => item.sample());
    const now = usage();
    const usedNs = Math.max(0, now.all - last.all - (now.loop - last.loop)) * 1000;
    last = now;
    const total = entered.reduce((sum, ns) => sum + ns, 0);
    const share = total > 0 ? Math.min(1, usedNs / total) : 0;
    for (const [i, item] of items.entries()) item.charge((entered[i] ?? 0) * share);
  };
};
