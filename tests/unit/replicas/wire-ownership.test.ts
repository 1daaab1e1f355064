// What taking a family over does to the agent service (serve-replicas.ts wireOwnership): its
// plugins and its pending child runs are resumed for exactly the family's agents, nobody else's.
import { afterEach, expect, it } from 'vitest';
import type { AgentService } from '../../../host/agents/service.ts';
import type { Ownership, Takeover } from '../../../host/replicas/ownership.ts';
import { wireOwnership } from '../../../host/serve-replicas.ts';
import { openStore, type Store } from '../../../host/store/index.ts';

let store: Store | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

it('a takeover resumes the plugins and the child runs of the family it took, and only those', async () => {
  store = openStore({ path: ':memory:' });
  let takeover: ((t: Takeover) => Promise<void>) | undefined;
  const ownership = {
    onTakeover: (hook: (t: Takeover) => Promise<void>) => {
      takeover = hook;
    },
    onLost: () => {},
  } as unknown as Ownership;
  const plugins: (ReadonlySet<string> | undefined)[] = [];
  const runs: (ReadonlySet<string> | undefined)[] = [];
  const agents = {
    resumePlugins: async (_onError: unknown, ids?: ReadonlySet<string>) => {
      plugins.push(ids);
      return 0;
    },
    teams: () => ({
      resume: async (ids?: ReadonlySet<string>) => {
        runs.push(ids);
        return 1;
      },
    }),
  } as unknown as AgentService;
  const lines: string[] = [];
  wireOwnership(ownership, { agents, store }, (line) => lines.push(line));
  await takeover?.({ familyId: 'agt_p', tenantId: 't', agentIds: ['agt_p', 'agt_c'], epoch: 2 });
  expect(plugins).toEqual([new Set(['agt_p', 'agt_c'])]);
  expect(runs).toEqual([new Set(['agt_p', 'agt_c'])]);
  expect(lines).toContain('family agt_p: watching 1 child run(s) again');
});
