// While the service is busy, idle CPUs poll instead of halting (issue 33). Every hop of a call wakes
// a process or a thread that sleeps: the isolate worker, the service, sandboxd in the container, the
// log's writer. On a VM guest whose idle vCPUs halt at once (cpuidle's haltpoll with
// guest_halt_poll_ns=0, as on the machines this is built on), each of those wake-ups is an
// interrupt through the hypervisor, paid by the waker in its write and by the woken on a cold CPU:
// 20 relayed round trips cost 2.75 ms with halting idle CPUs and 1.02 with polling ones
// (bench/read-chain-floor.ts, docs/performance.md "Round thirteen"). The service asks for polling
// the way latency-sensitive Linux services do: a CPU latency request of 0 µs (PM QoS,
// /dev/cpu_dma_latency) from the moment something happens (a request arrives or is answered, a
// program calls a tool, a terminal socket gets a keystroke, output flows to a client: an SSE
// event, terminal output) until `lingerMs` passed with nothing happening; a node agent does the
// same for each call it relays and each chunk it splices (sandbox/nodes/remote/server.ts).
// Activity, not what is in flight: a call that waits a minute (a `sleep 60`) does not keep idle
// CPUs polling for that minute, nor does a stream with nothing flowing (its heartbeats do not count).
// The request is lifted by writing the no-constraint value, and the kernel drops it when the file
// closes, so a process that dies leaves nothing behind. It costs the CPU time idle CPUs spend
// polling while the service is busy.
// Invariants: touch() never throws and costs a clock read while polling; a device that cannot be
// opened or written (not root, not Linux, a container without it) turns polling off for the life of
// the process, once and quietly (state `unavailable`).
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

/** off: DSH_IDLE_POLL off; unavailable: the device refused; idle: CPUs may halt; polling: the request is held. */
export const IDLE_POLL_STATES = ['off', 'unavailable', 'idle', 'polling'] as const;
export type IdlePollState = (typeof IDLE_POLL_STATES)[number];

export interface IdlePoll {
  /** Something happened (a request arrived or was answered, a program called a tool, a keystroke, output sent): poll for `lingerMs` more. */
  touch(): void;
  readonly state: IdlePollState;
  /** Lifts the request and closes the device. */
  close(): void;
}

export interface IdlePollOptions {
  enabled: boolean;
  /** How long idle CPUs go on polling after the last thing that happened. */
  lingerMs: number;
  /** The request to hold. Default: openCpuLatency(). */
  open?: () => LatencyRequest | undefined;
}

export function createIdlePoll(options: IdlePollOptions): IdlePoll {
  const open = options.open ?? openCpuLatency;
  let state: IdlePollState = options.enabled ? 'idle' : 'off';
  let request: LatencyRequest | undefined;
  let lastTouch = 0;
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
  // One timer while polling, armed again for what is left of the linger: a touch costs a clock read.
  const check = (): void => {
    timer = undefined;
    if (state !== 'polling') return;
    const left = options.lingerMs - (performance.now() - lastTouch);
    if (left >= 1) {
      timer = setTimeout(check, left);
      timer.unref();
    } else set(NO_CONSTRAINT_US, 'idle');
  };
  return {
    touch() {
      lastTouch = performance.now();
      if (state !== 'idle') return;
      set(0, 'polling');
      // set() may have given up (the device refused): `state` is read again.
      if ((state as IdlePollState) === 'polling' && timer === undefined) {
        timer = setTimeout(check, Math.max(1, options.lingerMs));
        timer.unref();
      }
    },
    get state() {
      return state;
    },
    close() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      if (state === 'polling') state = 'idle';
      try {
        request?.close();
      } catch {}
      request = undefined;
    },
  };
}

/** `fn` whose calls touch `poll` when they are made and when they return (or what they return settles). */
export function whilePolling<A extends unknown[], R>(
  poll: IdlePoll,
  fn: (...args: A) => R,
): (...args: A) => R {
  const touch = () => poll.touch();
  return (...args) => {
    touch();
    let answer: R;
    try {
      answer = fn(...args);
    } catch (error) {
      touch();
      throw error;
    }
    if (answer instanceof Promise) return answer.finally(touch) as R;
    touch();
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
    'Idle CPUs while calls come and go (DSH_IDLE_POLL): 1 for the state now (off, unavailable: the device refused, idle, polling).',
    'state',
    () => ({ [poll.state]: 1 }),
  );
  return poll;
}
