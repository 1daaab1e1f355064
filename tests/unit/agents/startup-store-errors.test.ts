// The start-up work serve-agents.ts starts without awaiting (reaping the sandboxes of deleted
// agents, resuming the plugins that were running) reads the store first. On PostgreSQL that read
// can fail (the server restarting, a connection slot refused): the failure is logged, and it never
// becomes an unhandled rejection (which ends a Node process).
import { afterEach, describe, expect, it } from 'vitest';
import { createFairScheduler } from '../../../host/api/fair.ts';
import { createMetrics } from '../../../host/api/metrics.ts';
import { loadConfig } from '../../../host/config.ts';
import type { Egress } from '../../../host/egress/index.ts';
import { SandboxError } from '../../../host/errors.ts';
import type { IsolateHost } from '../../../host/isolates/index.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import { startAgents } from '../../../host/serve-agents.ts';
import { openStore, type Store } from '../../../host/store/index.ts';
import { until } from '../../helpers/until.ts';

const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const failing = () => new SandboxError('STORE_FAILED', 'store: query failed: the server is restarting');

describe('startAgents', () => {
  it('logs a store that fails its start-up reads instead of leaving unhandled rejections', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    closers.push(() => void process.off('unhandledRejection', onUnhandled));
    const store: Store = openStore({ path: ':memory:' });
    closers.push(() => store.close());
    let reads = 0;
    store.agents.listAll = async () => {
      reads++;
      throw failing();
    };
    if (store.plugins !== undefined) {
      store.plugins.listRunning = async () => {
        reads++;
        throw failing();
      };
    }
    const isolates = { close: async () => {}, workerPids: () => [], limits: {} } as unknown as IsolateHost;
    const lines: string[] = [];
    const { agents, quotas } = startAgents(
      loadConfig({}, {}),
      {
        egress: undefined as unknown as Egress,
        store,
        sandboxes: createMemoryProvider(),
        isolates,
        metrics: createMetrics(),
        fair: createFairScheduler({ budgetMs: 50 }),
      },
      (line) => lines.push(line),
    );
    closers.unshift(() => agents.close(0));
    closers.unshift(() => quotas.close());
    await until(() => reads >= 2);
    // Node reports a rejection still unheard once the microtasks of its turn have run.
    for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(unhandled).toEqual([]);
    expect(lines.join('\n')).toMatch(/reap/);
    expect(lines.join('\n')).toMatch(/plugin/);
  });
});
