// While the service is busy, idle CPUs poll instead of halting (issue 33). Every hop of a call wakes
// a process or a thread that sleeps: the isolate worker, the service, sandboxd in the container, the
// log's writer. On a VM guest whose idle vCPUs halt at once (cpuidle's haltpoll with
// guest_halt_poll_ns=0, as on the machines this is built on), each of those wake-ups is an
// interrupt through the hypervisor, paid by the waker in its write and by the woken on a cold CPU:
// 20 relayed round trips cost 2.75 ms with halting idle CPUs and 1.02 with polling ones
// (bench/read-chain-floor.ts, docs/performance.md "Round thirteen"). The service asks for polling
// the way latency-sensitive Linux services do: a CPU latency request of 0 µs (PM QoS,
// /dev/cpu_dma_latency) while anything is in flight and for `lingerMs` after. The request is lifted
// by writing the no-constraint value, and the kernel drops it when the file closes, so a process that
// dies leaves nothing behind. It costs the CPU time idle CPUs spend polling while the service is busy.
// Invariants: enter/leave never throw and are counted (a leave without an enter is ignored); a device
// that cannot be opened or written (not root, not Linux, a container without it) turns polling off
// for the life of the process, once and quietly (state `unavailable`).
import { closeSync, openSync, writeSync } from 'node:fs';
import type { Metrics } from './api/metrics.ts';

/** The kernel's value for "no constraint" (PM_QOS_CPU_LATENCY_DEFAULT_VALUE, 2000 s in µs). */
export const NO_CONSTRAINT_US = 2_000_000_000;

export const CPU_LATENCY_DEVICE = '/dev/cpu_dma_latency';

/** A PM QoS CPU latency request: write(µs) updates it, close() drops it. */
export interface LatencyRequest {
  write(microseconds: number): void;
  close(): void;
}

/** Opens a CPU latency request (no constraint until written); undefined when the device refuses. */
export function openCpuLatency(path = CPU_LATENCY_DEVICE): LatencyRequest | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'w');
  } catch {
    return undefined;
  }
  const value = Buffer.alloc(4);
  return {
    write(microseconds) {
      value.writeInt32LE(microseconds);
      writeSync(fd, value);
    },
    close: () => closeSync(fd),
  };
}

export type IdlePollState = 'off' | 'unavailable' | 'idle' | 'polling';

export interface IdlePoll {
  /** Something started (a request, a program): idle CPUs poll from now until `lingerMs` after the last ends. */
  enter(): void;
  /** What `enter` started ended. */
  leave(): void;
  /** `work` counted from now until it settles; its own promise back. */
  around<T>(work: Promise<T>): Promise<T>;
  readonly state: IdlePollState;
  /** Lifts the request and closes the device. */
  close(): void;
}

export interface IdlePollOptions {
  enabled: boolean;
  /** How long idle CPUs go on polling after the last thing in flight ended. */
  lingerMs: number;
  /** The request to hold. Default: openCpuLatency(). */
  open?: () => LatencyRequest | undefined;
}

export function createIdlePoll(options: IdlePollOptions): IdlePoll {
  const open = options.open ?? openCpuLatency;
  let state: IdlePollState = options.enabled ? 'idle' : 'off';
  let request: LatencyRequest | undefined;
  let inFlight = 0;
  let lastLeft = 0;
  let timer: NodeJS.Timeout | undefined;

  const giveUp = (): void => {
    state = 'unavailable';
    try {
      request?.close();
    } catch {}
    request = undefined;
  };
  const set = (microseconds: number, next: IdlePollState): void => {
    try {
      request ??= open();
      if (request === undefined) {
        giveUp();
        return;
      }
      request.write(microseconds);
      state = next;
    } catch {
      giveUp();
    }
  };
  const release = (): void => {
    timer = undefined;
    if (inFlight > 0 || state !== 'polling') return;
    const left = options.lingerMs - (performance.now() - lastLeft);
    if (left >= 1) {
      timer = setTimeout(release, left);
      timer.unref();
      return;
    }
    set(NO_CONSTRAINT_US, 'idle');
  };
  const leave = (): void => {
    if (inFlight === 0) return;
    inFlight--;
    if (inFlight > 0 || state !== 'polling') return;
    lastLeft = performance.now();
    if (timer !== undefined) return;
    if (options.lingerMs <= 0) {
      release();
      return;
    }
    timer = setTimeout(release, options.lingerMs);
    timer.unref();
  };
  const enter = (): void => {
    inFlight++;
    if (state === 'idle') set(0, 'polling');
  };
  return {
    enter,
    leave,
    around(work) {
      enter();
      return work.finally(leave);
    },
    get state() {
      return state;
    },
    close() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      inFlight = 0;
      if (state === 'polling' || state === 'idle') state = options.enabled ? 'idle' : 'off';
      try {
        request?.close();
      } catch {}
      request = undefined;
    },
  };
}

/** `fn` whose every call counts as in flight until it returns, or until the promise it returns settles. */
export function whilePolling<A extends unknown[], R>(
  poll: IdlePoll,
  fn: (...args: A) => R,
): (...args: A) => R {
  return (...args) => {
    poll.enter();
    let answer: R;
    try {
      answer = fn(...args);
    } catch (error) {
      poll.leave();
      throw error;
    }
    if (answer instanceof Promise) return answer.finally(poll.leave) as R;
    poll.leave();
    return answer;
  };
}

/** The poll `serve` holds (config's DSH_IDLE_POLL), its state on /metrics. */
export function startIdlePoll(
  config: { idlePoll: boolean; idlePollLingerMs: number },
  metrics: Pick<Metrics, 'labelledGauge'>,
): IdlePoll {
  const poll = createIdlePoll({ enabled: config.idlePoll, lingerMs: config.idlePollLingerMs });
  metrics.labelledGauge(
    'dsh_idle_poll_state',
    'Idle CPUs while calls are in flight (DSH_IDLE_POLL): 1 for the state now (off, unavailable: the device refused, idle, polling).',
    'state',
    () => ({ [poll.state]: 1 }),
  );
  return poll;
}
