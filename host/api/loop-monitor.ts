// Watches the control plane's event loop: every tenant's requests share it, so a stall is an outage
// for all of them. A probe timer ticks every `intervalMs`; the time it fires late is the loop's lag.
// Exposed in /metrics as gauges (the longest lag in the last window, the longest since start, the
// number of stalls), and each stall longer than `stallMs` is logged with its length.
// Not monitorEventLoopDelay: on Node 24 its histogram missed a 300 ms block that ran in a
// setImmediate, a microtask or an I/O callback (it saw only blocks inside timer callbacks), while a
// late-timer probe sees a block wherever it runs.
// Invariants: the timer is unref'd (it never keeps the process alive); stop() is idempotent and
// leaves the gauges reading 0 lag.
import type { Metrics } from './metrics.ts';

export interface LoopMonitorOptions {
  /** Where the gauges go; none: only the log. */
  metrics?: Metrics;
  /** Told about each stall past stallMs. */
  log: (line: string) => void;
  /** A stall longer than this is logged. Default 1000 ms. */
  stallMs?: number;
  /** Probe period. Default 100 ms. */
  intervalMs?: number;
  /** The window of dsh_event_loop_lag_seconds. Default 10000 ms. */
  windowMs?: number;
}

export interface LoopMonitor {
  /** Longest lag (ms) in the current and the previous window. */
  recentMaxMs(): number;
  stalls(): number;
  stop(): void;
}

export const startLoopMonitor = (options: LoopMonitorOptions): LoopMonitor => {
  const stallMs = options.stallMs ?? 1000;
  const intervalMs = options.intervalMs ?? 100;
  const windowMs = options.windowMs ?? 10_000;
  let expected = performance.now() + intervalMs;
  let windowStart = performance.now();
  let current = 0;
  let previous = 0;
  let highest = 0;
  let stalls = 0;
  let stopped = false;

  const tick = (): void => {
    const now = performance.now();
    const lag = Math.max(0, now - expected);
    expected = now + intervalMs;
    if (now - windowStart >= windowMs) {
      previous = current;
      current = 0;
      windowStart = now;
    }
    current = Math.max(current, lag);
    highest = Math.max(highest, lag);
    if (lag > stallMs) {
      stalls++;
      options.log(
        `event loop stalled for ${Math.round(lag)} ms: every request waited; a tool or handler ran that long without yielding`,
      );
    }
  };
  const timer = setInterval(tick, intervalMs);
  timer.unref();

  const monitor: LoopMonitor = {
    recentMaxMs: () => (stopped ? 0 : Math.max(current, previous)),
    stalls: () => stalls,
    stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
    },
  };
  options.metrics?.gauge(
    'dsh_event_loop_lag_seconds',
    `Longest event-loop lag in the last ${windowMs / 1000}-${(2 * windowMs) / 1000} s (a ${intervalMs} ms probe timer firing late).`,
    () => monitor.recentMaxMs() / 1000,
  );
  options.metrics?.gauge(
    'dsh_event_loop_lag_max_seconds',
    'Longest event-loop lag since the control plane started.',
    () => highest / 1000,
  );
  options.metrics?.gauge(
    'dsh_event_loop_stalls',
    `Event-loop stalls longer than ${stallMs / 1000} s since the control plane started.`,
    () => stalls,
  );
  return monitor;
};
