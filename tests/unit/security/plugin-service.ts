// A control plane with creator plugins for the security suite, in-process: the real isolate host,
// real plugin worker processes, the memory sandbox and two tenants; requests go through app.request()
// like a client's. Helpers define and run plugins as a model would, through the cordis_* tools.
import { expect } from 'vitest';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import { createApp } from '../../../host/api/app.ts';
import { createIsolateHost } from '../../../host/isolates/index.ts';
import type { PluginLimits, PluginProcesses, PluginProcessesOptions } from '../../../host/plugins/index.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import { openStore } from '../../../host/store/index.ts';
import { createTenantQuotaCache, pluginLimitsOf } from '../../../host/tenants/quota-cache.ts';
import type { Loose } from '../api/harness.ts';

export const pluginService = async (
  options: {
    limits?: Partial<PluginLimits>;
    /** The plugin worker processes (the caller closes them); default: made from `processOptions`. */
    processes?: PluginProcesses;
    processOptions?: PluginProcessesOptions;
    /** With it: the admin key, and each tenant's `plugins` quota caps its running plugins (as serve-agents wires it). */
    adminKey?: string;
  } = {},
) => {
  const isolates = createIsolateHost({ workers: 1, prewarm: 1 });
  const store = openStore({ path: ':memory:' });
  const quotas = options.adminKey === undefined ? undefined : createTenantQuotaCache(store.tenants);
  const quotaOf = quotas === undefined ? () => undefined : pluginLimitsOf(quotas);
  const { agents } = assembleAgents({
    store,
    sandboxes: createMemoryProvider(),
    isolates,
    plugins: {
      ...(options.processes
        ? { processes: options.processes }
        : { processOptions: options.processOptions ?? {} }),
      limitsOf: (tenantId) => ({
        cpuMsPerCallback: 300,
        callWallMs: 3_000,
        startWallMs: 3_000,
        ...options.limits,
        ...quotaOf(tenantId),
      }),
    },
  });
  const app = createApp({
    startedAt: Date.now(),
    version: 'test',
    store,
    agents,
    ...(options.adminKey === undefined ? {} : { adminKey: options.adminKey }),
  });
  const tenantA = await store.tenants.createTenant('a');
  const tenantB = await store.tenants.createTenant('b');
  const keyA = tenantA.apiKey;
  const keyB = tenantB.apiKey;
  let seq = 0;

  const request = async (
    key: string,
    method: string,
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Loose> => {
    const res = await app.request(url, {
      method,
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    let json: Loose;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    return { status: res.status, json };
  };
  /** One call as its own batch; the batch itself must be answered 200. */
  const call = async (key: string, agentId: string, name: string, args: unknown = {}): Promise<Loose> => {
    const res = await request(key, 'POST', `/v1/agents/${agentId}/calls`, {
      calls: [{ id: `c${++seq}`, name, arguments: args }],
    });
    expect(res.status).toBe(200);
    return res.json.results[0];
  };
  const creator = async (key: string) =>
    (await request(key, 'POST', '/v1/agents', { preset: 'creator' })).json.id as string;
  /** cordis_define under a new plugin, or under `pluginId`: the ids cordis_run takes (not `created`). */
  const define = async (key: string, agentId: string, host: string, pluginId?: string) => {
    const defined = await call(key, agentId, 'cordis_define', {
      plugin: pluginId === undefined ? { kind: 'new', idPrefix: 'p' } : { kind: 'existing', pluginId },
      name: `p${++seq}`,
      purpose: '',
      code: { host },
    });
    const { pluginId: id, packageId } = defined.value as { pluginId: string; packageId: string };
    return { pluginId: id, packageId };
  };
  /** cordis_define, then cordis_run; `run` is the cordis_run result. */
  const run = async (key: string, agentId: string, host: string) => {
    const pkg = await define(key, agentId, host);
    return { ...pkg, run: await call(key, agentId, 'cordis_run', { ...pkg, mode: 'run' }) };
  };
  /** Tenant B's ordinary work and the health check are answered. */
  const bServed = async () => {
    const agentId = (await request(keyB, 'POST', '/v1/agents', {})).json.id;
    expect((await call(keyB, agentId, 'write', { file_path: 'x', content: 'y' })).ok).toBe(true);
    expect((await request(keyB, 'GET', '/v1/health')).status).toBe(200);
  };
  const close = async () => {
    quotas?.close();
    await agents.close(0);
    await isolates.close();
    store.close();
  };
  return {
    store,
    keyA,
    keyB,
    tenantA: tenantA.id,
    tenantB: tenantB.id,
    request,
    call,
    creator,
    define,
    run,
    bServed,
    close,
  };
};
