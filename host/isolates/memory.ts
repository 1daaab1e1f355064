// Memory of isolates as it really is, and how much of it a worker may hold. isolated-vm's
// `memoryLimit` is checked only after a full garbage collection (and for ArrayBuffers, by its
// allocator): a string flattened or an array grown between two collections is not counted until
// the next one, and when V8 nears the limit isolated-vm lets it go 1 GB past it rather than crash.
// Measured here (bench/isolates-memory.ts): with a 32 MB limit, `[s + 'a', s + 'b'].join('')` of a
// 2**27-character `s` completes with ~260 MB resident, `new Array(2 ** 26).fill(0)` reaches 1.1 GB,
// one 2**29-character two-byte string 1 GB. So the worker governs its isolates by what the
// process really holds (its resident set), which it reads every poll:
//   allowance = resident set at the last quiet poll (no isolate ran since the one before)
//             + for each run: 1.5 × its limit + 16 MB while its isolate runs, its limit + 4 MB while it waits
//             + SLACK_MB
// Past the allowance (or the worker's whole budget), somebody holds more than its limit allows;
// only isolates that ran since the last poll can have grown, so those runs end as `memory` — but
// growing by tens of MB takes CPU, so one that ran a sliver of what the busiest one ran (under a
// tenth: a neighbour that only reached its next tool call while another allocated), or under 2 ms
// of CPU even alone, is not blamed; its heap is checked against its own limit instead. A run that waits holds what its heap holds,
// so when none ran, the waiting ones over their own limit (heap statistics: V8 heap plus external
// memory) end instead. What no poll can stop is one
// allocation already under way (a single object is at most ~1 GB in V8): the supervisor's resident
// cap stays the last resort, and the host sizes a worker's concurrency so that every run's
// reservation fits its budget (`runsPerWorker`). Since the watch sees the process and not whose
// heap grew, the host keeps owners in separate workers where it can (placement.ts) and retires a
// worker once a run of it ran out of memory (host.ts); runs ended together are told so (`beside`).
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/** Resident memory that neither runs nor waits: node, isolated-vm, idle pre-warmed isolates (MB). */
export const WORKER_BASE_MB = 80;
/** Room over the reservations for V8 and malloc pages not yet given back (MB). */
export const SLACK_MB = 32;
/** Share of the supervisor's resident cap the worker governs to; the rest absorbs one late allocation. */
export const BUDGET_SHARE = 0.85;

/** What a run that waits may hold: its heap limit plus the isolate's own structures (MB). */
export const waitingReserveMb = (memoryMb: number): number => memoryMb + 4;
/** What a run whose isolate runs may hold: V8 overshoots its limit between collections (MB). */
export const runningReserveMb = (memoryMb: number): number => Math.ceil(1.5 * memoryMb) + 16;

/** Isolates that run at once in one worker: isolated-vm's thread pool has a thread per core, plus one. */
export const RUNNING_AT_ONCE = availableParallelism() + 1;

/**
 * What the runs of one worker may reserve while they wait (MB): its budget, less what the process
 * itself holds, the slack, and the overshoot of RUNNING_AT_ONCE running isolates of `memoryMb`.
 */
export const workerCapacityMb = (workerRssMb: number, memoryMb: number): number =>
  Math.max(
    waitingReserveMb(memoryMb),
    workerRssMb * BUDGET_SHARE -
      WORKER_BASE_MB -
      SLACK_MB -
      RUNNING_AT_ONCE * (runningReserveMb(memoryMb) - waitingReserveMb(memoryMb)),
  );

/** How many runs of `memoryMb` one worker holds at once within `workerRssMb` (at least 1). */
export const runsPerWorker = (workerRssMb: number, memoryMb: number): number =>
  Math.max(1, Math.floor(workerCapacityMb(workerRssMb, memoryMb) / waitingReserveMb(memoryMb)));

/** This process's resident set in bytes (Linux /proc; elsewhere what Node reports). */
export const residentBytes = (): number => {
  try {
    return Number(readFileSync('/proc/self/statm', 'utf8').split(' ')[1]) * 4096;
  } catch {
    return process.memoryUsage.rss();
  }
};

export interface GovernedRun {
  readonly memoryMb: number;
  /** CPU the isolate burned since the previous poll, in ns (0: it did not run). */
  readonly cpuNs: number;
}

/** A run that ran under this share of the busiest one's CPU since the last poll is not blamed. */
export const LIGHT_SHARE = 0.1;
/**
 * Nor is one that ran under this much CPU since the last poll, even alone: growing by tens of MB
 * takes milliseconds of CPU, so what the process holds past its allowance is somebody else's (a run
 * that just ended, isolates being prepared or disposed) and the light one's heap is checked instead.
 */
export const LIGHT_CPU_NS = 2_000_000;

export interface MemoryVerdict<R> {
  /** Runs to end as `memory` now. */
  end: R[];
  /** Runs that ran, too little to have grown much: to check against their own limit instead. */
  spared: R[];
  /** Over the allowance with no isolate running: check the waiting runs' heaps. */
  checkWaiting: boolean;
  /** What the worker may hold now, in bytes (for diagnostics and tests). */
  allowance: number;
}

export interface MemoryGovernor {
  /** One poll: the resident set now and the live runs; says who has to go. */
  poll<R extends GovernedRun>(rss: number, runs: readonly R[]): MemoryVerdict<R>;
  /**
   * Runs ended since the last poll, whatever ended them (isolated-vm's own limit, a CPU budget, a
   * cancel): what the process holds now is still theirs for DRAIN_MS, not the next runs'.
   */
  ended(rss: number): void;
}

/** Resident memory a quiet worker may hold past what it held at start before it is replaced (MB). */
export const BLOAT_MB = 128;

/** How long the memory of ended runs may take to be given back before it counts again (ms). */
export const DRAIN_MS = 1_000;

/**
 * @param budgetMb the most the worker may hold, whatever its runs reserve.
 * @param now clock in ms (tests). Default performance.now.
 */
export const createMemoryGovernor = (
  budgetMb: number,
  startRss: number,
  now: () => number = () => performance.now(),
): MemoryGovernor => {
  const MB = 1024 * 1024;
  let quietRss = startRss;
  // After runs were ended, their isolates take a moment to be disposed and their memory to be
  // unmapped: until then it is theirs, not that of the runs that happen to run next.
  let drainRss = 0;
  let drainUntil = Number.NEGATIVE_INFINITY;
  return {
    poll(rss, runs) {
      const running = runs.filter((run) => run.cpuNs > 0);
      if (running.length === 0) quietRss = rss;
      let reserved = SLACK_MB;
      for (const run of runs)
        reserved += run.cpuNs > 0 ? runningReserveMb(run.memoryMb) : waitingReserveMb(run.memoryMb);
      const base = now() < drainUntil ? Math.max(quietRss, drainRss) : quietRss;
      const allowance = Math.min(base + reserved * MB, budgetMb * MB);
      if (rss <= allowance) return { end: [], spared: [], checkWaiting: false, allowance };
      if (running.length > 0) {
        drainRss = rss;
        drainUntil = now() + DRAIN_MS;
      }
      const busiest = Math.max(0, ...running.map((run) => run.cpuNs));
      const floor = Math.max(busiest * LIGHT_SHARE, LIGHT_CPU_NS);
      const end = running.filter((run) => run.cpuNs >= floor);
      const spared = running.filter((run) => run.cpuNs < floor);
      return { end, spared, checkWaiting: running.length === 0, allowance };
    },
    ended(rss) {
      drainRss = now() < drainUntil ? Math.max(drainRss, rss) : rss;
      drainUntil = now() + DRAIN_MS;
    },
  };
};

/** What a worker's poll governs: a program's run, or a plugin's isolate. */
export interface Governed {
  readonly id: number;
  /** The isolate's heap limit (isolated-vm `memoryLimit`), in MB. */
  readonly memoryMb: number;
  /**
   * The CPU it was charged since the last check (ns; CPU budgets are the meter's, cpu.ts), or
   * undefined when it is over (ended, or its isolate died: then it ends now), so that what the
   * process holds for a moment is still its own, not the next runs'.
   */
  check(): number | undefined;
  /**
   * Ends it as `memory`. `beside`: it was ended with others that ran in the same window (or while
   * others were spared), so the memory may not have been its own; its message says so.
   */
  outOfMemory(beside: boolean): void;
  /** The isolate's V8 heap plus its external memory, in bytes; undefined once it is gone. */
  heapBytes(): Promise<number | undefined>;
}

/**
 * One worker's poll, to call every few tens of ms with what it holds: CPU checks, then memory
 * (the governor above). One whose isolate just stopped running (it now waits) has its heap
 * checked against its own limit once: what it keeps while it waits is what the rest of the
 * worker has to live with; when the process is over its allowance with nobody running, every
 * waiting one is checked.
 */
export const createMemoryWatch = (
  budgetMb: number,
  rss: () => number = residentBytes,
  onBloated?: () => void,
): ((live: Iterable<Governed>) => void) => {
  const startRss = rss();
  const governor = createMemoryGovernor(budgetMb, startRss);
  let bloated = false;
  let ranBefore = new Set<number>();
  /** The runs of the previous poll: one gone since has ended, and its memory is still being given back. */
  let seen = new Set<number>();
  const heapChecks = new Set<number>();
  const checkHeap = (item: Governed): void => {
    if (heapChecks.has(item.id)) return;
    heapChecks.add(item.id);
    void item.heapBytes().then((bytes) => {
      heapChecks.delete(item.id);
      if (bytes !== undefined && bytes > item.memoryMb * 1024 * 1024) item.outOfMemory(false);
    });
  };
  return (live) => {
    const sampled: Array<{ item: Governed; memoryMb: number; cpuNs: number }> = [];
    let over = false;
    for (const item of live) {
      const cpuNs = item.check();
      if (cpuNs === undefined) over = true;
      else sampled.push({ item, memoryMb: item.memoryMb, cpuNs });
    }
    const now = rss();
    const ids = new Set(sampled.map((sample) => sample.item.id));
    for (const id of seen) if (!ids.has(id)) over = true;
    if (over) governor.ended(now);
    seen = ids;
    // Quiet and still holding much more than at start: what runs left behind (a heap V8 keeps,
    // pages malloc does not give back) would count as the next runs' own allowance (and let one
    // pass its limit) or against them; the worker asks to be replaced, once.
    if (sampled.length === 0 && !over && !bloated && now > startRss + BLOAT_MB * 1024 * 1024) {
      bloated = true;
      onBloated?.();
    }
    const verdict = governor.poll(now, sampled);
    // With several candidates the blame is shared: a running isolate's heap cannot be read, so
    // all that ran enough end (the host keeps owners apart where it can: placement.ts).
    const beside = verdict.end.length > 1 || verdict.spared.length > 0;
    for (const { item } of verdict.end) item.outOfMemory(beside);
    for (const { item } of verdict.spared) checkHeap(item);
    const ran = new Set<number>();
    for (const sample of sampled) {
      const didRun = sample.cpuNs > 0;
      if (!didRun && (ranBefore.has(sample.item.id) || verdict.checkWaiting)) checkHeap(sample.item);
      if (didRun) ran.add(sample.item.id);
    }
    ranBefore = ran;
  };
};
