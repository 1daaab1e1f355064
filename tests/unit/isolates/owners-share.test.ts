// Isolate run slots shared by several tenants (round 5 of the adversarial pass): an owner holds at
// most its share of the open workers' slots (placement.ts), but two owners at their halves filled
// them all, so a third tenant's first program waited for one of theirs to end (up to its wall
// clock: 10 minutes by default) although it had nothing running. An owner's second and later runs
// now leave a reserve of slots free for owners that have none.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { IsolateHost, JsonValue } from '../../../host/isolates/index.ts';
import { until } from '../../helpers/until.ts';
import { runner, startHost, value } from './helpers.ts';

let host: IsolateHost;
beforeAll(async () => {
  host = await startHost({ workers: 1, inline: false, maxRunsPerWorker: 4, limits: { memoryMb: 16 } });
}, 60_000);
afterAll(() => host.close());

it("gives a third tenant's first program a slot while two tenants hold their shares", async () => {
  const run = runner(() => host);
  let release = (): void => undefined;
  const held = new Promise<JsonValue>((resolve) => (release = () => resolve(null)));
  let waiting = 0;
  const hold = (owner: string) =>
    run({
      code: 'await tools.echo({}); return 1',
      owner,
      onCall: async () => {
        waiting++;
        return held;
      },
    });
  // Each of A and B asks for its share (2 of the 4 slots); what can run, runs and waits on its call.
  const hogs = ['a', 'a', 'b', 'b'].map(hold);
  await until(() => waiting >= 3, { what: 'the hogs to run' });
  // C has nothing running: its first program runs now, not after A's or B's end.
  expect(value(await run({ code: 'return 7', owner: 'c' }))).toBe(7);
  release();
  for (const outcome of await Promise.all(hogs)) expect(value(outcome)).toBe(1);
}, 60_000);
