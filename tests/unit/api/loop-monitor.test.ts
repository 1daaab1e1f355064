// The event-loop monitor (issue 10): a stall shows in /metrics and is logged, wherever it happens
// (here inside a setImmediate callback, where monitorEventLoopDelay does not see it on Node 24).
import { afterEach, expect, it } from 'vitest';
import { type LoopMonitor, startLoopMonitor } from '../../../host/api/loop-monitor.ts';
import { until } from '../../helpers/until.ts';
import { ADMIN_KEY, type Api, makeApi } from './harness.ts';

let api: Api | undefined;
let monitor: LoopMonitor | undefined;
afterEach(async () => {
  monitor?.stop();
  await api?.close();
});

const block = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // the stall under test
  }
};
const gauge = (text: string, name: string): number =>
  Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);

it('a stall longer than stallMs is logged and shows in /metrics', async () => {
  api = await makeApi();
  const lines: string[] = [];
  monitor = startLoopMonitor({
    metrics: api.metrics,
    log: (l) => lines.push(l),
    intervalMs: 20,
    stallMs: 250,
  });
  await new Promise((resolve) => setTimeout(resolve, 60)); // the probe ticks a few times first
  await new Promise<void>((resolve) =>
    setImmediate(() => {
      block(400);
      resolve();
    }),
  );
  await until(() => lines.length >= 1, { what: 'the probe to see the stall' });
  expect(lines[0]).toMatch(/^event loop stalled for \d+ ms/);
  const metrics = (await api.request(ADMIN_KEY, 'GET', '/metrics')).text;
  expect(gauge(metrics, 'dsh_event_loop_lag_seconds')).toBeGreaterThanOrEqual(0.3);
  expect(gauge(metrics, 'dsh_event_loop_lag_max_seconds')).toBeGreaterThanOrEqual(0.3);
  expect(gauge(metrics, 'dsh_event_loop_stalls')).toBe(lines.length);
});

it('short lags are measured but not logged, and stop() ends the probe', async () => {
  const lines: string[] = [];
  monitor = startLoopMonitor({ log: (l) => lines.push(l), intervalMs: 20, stallMs: 1000 });
  await new Promise((resolve) => setTimeout(resolve, 30)); // the probe ticks once first
  block(150);
  const probe = monitor;
  await until(() => probe.recentMaxMs() >= 100, { what: 'the probe to see the lag' });
  expect(lines).toEqual([]);
  monitor.stop();
  monitor.stop();
  expect(monitor.recentMaxMs()).toBe(0);
});
