// Idle polling while calls run (host/idle-poll.ts), as `serve` wires it: a request and a program
// in flight holds the CPU latency request, /metrics says so, and `DSH_IDLE_POLL=off` holds nothing
// (when the held request is lifted: tests/unit/idle-poll.test.ts).
import { accessSync, constants } from 'node:fs';
import { expect, it } from 'vitest';
import { CPU_LATENCY_DEVICE } from '../../../host/idle-poll.ts';
import { json, served } from './served.ts';

const METRICS = 'metrics-key-for-the-idle-poll-test-0123';
const writable = (() => {
  try {
    accessSync(CPU_LATENCY_DEVICE, constants.W_OK);
    return true;
  } catch {
    return false;
  }
})();

const stateOf = async (url: string): Promise<string | undefined> => {
  const res = await fetch(`${url}/metrics`, { headers: { Authorization: `Bearer ${METRICS}` } });
  const text = await res.text();
  return /^dsh_idle_poll_state\{state="([a-z]+)"\} 1$/m.exec(text)?.[1];
};

const on = served('idle-poll', { metricsKey: METRICS, idlePollLingerMs: 0 });
const off = served('idle-poll-off', { metricsKey: METRICS, idlePoll: false });

it('a request in flight holds the request (a scrape is one); without the device the service runs on, unavailable', async () => {
  const server = await on.start();
  expect(await stateOf(server.url)).toBe(writable ? 'polling' : 'unavailable');
  const key = (await server.store.tenants.createTenant('poll')).apiKey;
  expect((await json(server, key, 'GET', '/v1/agents')).status).toBe(200);
  expect(await stateOf(server.url)).toBe(writable ? 'polling' : 'unavailable');
});

it('DSH_IDLE_POLL off: nothing is held, whatever runs', async () => {
  const server = await off.start();
  expect(await stateOf(server.url)).toBe('off');
});
