// One tenant's programs must not keep another tenant's program waiting (adversarial pass on code
// mode budgets): tenant A fills the isolate host with programs that compute for their whole CPU
// budget; tenant B's one-line program used to queue behind them until the first of them ran out
// of CPU (6 s behind 16 programs of 6 s each on one worker, 10.5-11.8 s on two with the default
// 10 s budget, and up to the 60 s an agent may ask for). Real isolate host, public API.
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../helpers/until.ts';
import { type Harness, type Loose, startHarness, text } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ isolateWorkers: 1 });
});
afterAll(() => h?.close());

/** CPU time (ms) used so far by this process's children: the isolate workers (the server runs here). */
const childrenCpuMs = (): number => {
  let ticks = 0;
  for (const task of readdirSync('/proc/self/task'))
    for (const pid of readFileSync(`/proc/self/task/${task}/children`, 'utf8').split(' ').filter(Boolean)) {
      try {
        const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
        ticks += Number(fields[11]) + Number(fields[12]); // utime, stime
      } catch {
        // exited meanwhile
      }
    }
  return ticks * 10; // USER_HZ is 100
};

describe('isolate workers are shared fairly between tenants', () => {
  it("a tenant's program runs while another tenant's programs burn their whole CPU budgets", async () => {
    // More programs than one worker holds (9 of 64 MB), each computing for 8 s of CPU.
    const flooders = await Promise.all(
      Array.from({ length: 10 }, () => h.agent(h.keyA, { preset: 'code', codeMode: { cpuMs: 8000 } })),
    );
    const b = await h.agent(h.keyB, { preset: 'code' });
    const idleCpuMs = childrenCpuMs();
    let settled = 0;
    const flood = flooders.map((a) =>
      h
        .calls(h.keyA, a, [['burn', 'run_code', { description: 'burn', code: 'while (true) {}' }]])
        .finally(() => settled++),
    );
    // Every program of A was dispatched to the isolate host before B's, and they are burning CPU.
    await until(
      async () =>
        (await Promise.all(flooders.map((a) => h.server.store.events.list(a)))).every((events) =>
          events.some((e) => e.callId === 'burn'),
        ),
      {
        what: "A's programs to be dispatched",
        timeoutMs: 30_000,
      },
    );
    await until(() => childrenCpuMs() - idleCpuMs >= 1000, {
      what: "A's programs to spin",
      timeoutMs: 30_000,
    });
    const [r] = await h.calls(h.keyB, b, [['b', 'run_code', { description: 'one', code: 'return 40 + 2' }]]);
    expect(text(r as Loose)).toBe('42');
    // B's program did not wait for any of A's to end.
    expect(settled).toBe(0);
    // Deleting A's agents aborts their programs (and ends the test early).
    await Promise.all(flooders.map((a) => h.http(h.keyA, 'DELETE', `/v1/agents/${a}`)));
    const results = await Promise.all(flood);
    for (const [res] of results) expect((res as Loose).ok).toBe(false);
  }, 60_000);
});
