// /metrics passes Prometheus' naming rules as `promtool check metrics` applies them, for every
// family the app registers (prom-client's process collectors included): a counter's name ends in
// `_total` and no other type's does; names are snake_case; every family has its HELP and TYPE;
// histograms and summaries do not end in a suffix their samples add. And agents per tenant is a
// gauge: dsh_agents{tenant}.
import { describe, expect, it } from 'vitest';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import { createApp } from '../../../host/api/app.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import { openStore } from '../../../host/store/index.ts';

const METRICS_KEY = 'metrics-key-for-tests-0123456789';

/** Each family of the exposition: its TYPE and whether it has a HELP. */
function families(text: string): Map<string, { type: string; help: boolean }> {
  const found = new Map<string, { type: string; help: boolean }>();
  for (const [, kind, name, rest] of text.matchAll(/^# (HELP|TYPE) (\S+) ?(.*)$/gm)) {
    const family = found.get(name as string) ?? { type: '', help: false };
    if (kind === 'TYPE') family.type = rest as string;
    else family.help = (rest as string).trim() !== '';
    found.set(name as string, family);
  }
  return found;
}

describe('/metrics names', () => {
  it('follow the type rules, and count agents per tenant', async () => {
    const store = openStore({ path: ':memory:' });
    const { agents } = assembleAgents({ store, sandboxes: createMemoryProvider() });
    const app = createApp({ startedAt: Date.now(), version: 'test', store, agents, metricsKey: METRICS_KEY });
    try {
      const a = await store.tenants.createTenant('a');
      const b = await store.tenants.createTenant('b');
      for (const [tenant, n] of [
        [a.id, 2],
        [b.id, 1],
      ] as const)
        for (let i = 0; i < n; i++) await agents.create(tenant, { preset: 'standard' });
      const response = await app.request('/metrics', { headers: { Authorization: `Bearer ${METRICS_KEY}` } });
      expect(response.status).toBe(200);
      const text = await response.text();
      const all = families(text);
      expect(all.size).toBeGreaterThan(30);
      const broken: string[] = [];
      for (const [name, { type, help }] of all) {
        if (!/^[a-z_:][a-z0-9_:]*$/.test(name)) broken.push(`${name}: not snake_case`);
        if (!help) broken.push(`${name}: no HELP`);
        if (type === 'counter' && !name.endsWith('_total')) broken.push(`${name}: a counter without _total`);
        if (type !== 'counter' && name.endsWith('_total')) broken.push(`${name}: a ${type} named _total`);
        if (/_(count|sum|bucket)$/.test(name)) broken.push(`${name}: a reserved suffix`);
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(type))
          broken.push(`${name}: TYPE ${type}`);
      }
      expect(broken).toEqual([]);
      expect(all.get('dsh_store_appends_refused_total')?.type).toBe('counter');
      expect(all.get('dsh_store_payloads_dropped_total')?.type).toBe('counter');
      expect(all.get('dsh_agents')?.type).toBe('gauge');
      expect(text).toContain(`dsh_agents{tenant="${a.id}"} 2`);
      expect(text).toContain(`dsh_agents{tenant="${b.id}"} 1`);
    } finally {
      await agents.close(0);
      store.close();
    }
  });
});
