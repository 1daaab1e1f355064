// The API in-process: a libsql store in memory, the real registry and pipeline with the builtin
// sandbox tools, the memory sandbox provider, and two tenants. Requests go through app.request().

import { configOf } from '../../../host/agents/configs.ts';
import { type AgentServiceOptions, createAgentService } from '../../../host/agents/index.ts';
import { agentEgressRules, registerWebTools } from '../../../host/agents/web.ts';
import { type ApiLimits, type AppDeps, createApp, DEFAULT_LIMITS } from '../../../host/api/app.ts';
import { createLifecycle } from '../../../host/api/lifecycle.ts';
import { createMetrics, observeCalls } from '../../../host/api/metrics.ts';
import { childWorkspaceQuota } from '../../../host/api/quotas.ts';
import { createEgress, type EgressOptions } from '../../../host/egress/index.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import type { SandboxProvider } from '../../../host/sandbox/types.ts';
import { type OpenStoreOptions, openStore } from '../../../host/store/index.ts';
import { createTenantDeletion, type TenantDeletionOptions } from '../../../host/tenants/deletion.ts';
import { strReplaceEditorTool } from '../../../host/tools/builtin/index.ts';
import { createRegistry, createRequestApprovals } from '../../../host/tools/index.ts';
import { standardSandboxTools } from '../builtin/standard-tools.ts';

/** Response JSON as tests read it: loosely, by path. */
// biome-ignore lint/suspicious/noExplicitAny: tests read response JSON by path
export type Loose = any;

export const ADMIN_KEY = 'admin-key-for-tests-0123456789';

export const makeApi = async (
  limits: Partial<ApiLimits> = {},
  options: {
    sandboxes?: SandboxProvider;
    store?: Partial<OpenStoreOptions>;
    agents?: Pick<
      AgentServiceOptions,
      | 'reapRetryMs'
      | 'questionTtlMs'
      | 'mcpLimitsOf'
      | 'children'
      | 'runtimes'
      | 'checkpoints'
      | 'freeze'
      | 'now'
      | 'plugins'
      | 'deleteGraceMs'
    >;
    /** Options of the tenant deletion (DELETE /v1/tenants/:id) over the harness's. */
    deletion?: Partial<TenantDeletionOptions>;
    /** With it: the egress gateway (these options over its defaults), /v1/egress and the web tools. */
    egress?: Partial<EgressOptions>;
    /** More of the app's dependencies (the pool and disk readers of /metrics). */
    app?: Pick<
      AppDeps,
      | 'pool'
      | 'workspaceDisk'
      | 'fair'
      | 'connections'
      | 'authThrottle'
      | 'trustedProxies'
      | 'metricsKey'
      | 'replicas'
      | 'runtimes'
      | 'nodes'
      | 'activity'
    >;
  } = {},
) => {
  const store = openStore({ path: ':memory:', ...options.store });
  const registry = createRegistry({ log: store.events, approvals: createRequestApprovals(store.requests) });
  for (const tool of [...standardSandboxTools(), strReplaceEditorTool]) registry.global.register(tool);
  const egress =
    options.egress === undefined
      ? undefined
      : createEgress({
          store: store.egress,
          events: store.events,
          agentRulesOf: agentEgressRules(store.agents),
          maxBudget: { connections: 16, bytesPerHour: 64 * 1024 * 1024 },
          ...options.egress,
        });
  if (egress !== undefined) registerWebTools(registry.global, { web: egress.web, configOf });
  const sandboxes = options.sandboxes ?? createMemoryProvider();
  const metrics = createMetrics();
  const agents = createAgentService({
    store,
    registry,
    sandboxes,
    observe: observeCalls(metrics),
    // As serve-agents wires it: a child with a workspace of its own is held to the disk quota.
    admitWorkspace: childWorkspaceQuota(
      store.tenants,
      () => agents,
      limits.workspaceMb ?? DEFAULT_LIMITS.workspaceMb,
    ),
    ...options.agents,
    ...(egress === undefined ? {} : { egress: egress.gateway }),
  });
  const lifecycle = createLifecycle();
  const tenantDeletion = createTenantDeletion({
    tenants: store.tenants,
    purge: store.tenantPurge,
    events: store.events,
    agents: store.agents,
    service: agents,
    sliceRows: 7, // small slices: a deletion takes several
    retryMs: 50,
    ...options.deletion,
  });
  const app = createApp({
    startedAt: Date.now(),
    version: 'test',
    store,
    agents,
    adminKey: ADMIN_KEY,
    limits,
    metrics,
    lifecycle,
    tenantDeletion,
    ...(egress === undefined ? {} : { egress: egress.settings }),
    ...options.app,
  });
  const a = await store.tenants.createTenant('tenant-a');
  const b = await store.tenants.createTenant('tenant-b');

  const request = async (
    key: string | undefined,
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) => {
    const init: RequestInit = {
      method,
      headers: { ...(key ? { Authorization: `Bearer ${key}` } : {}), ...headers },
    };
    if (body !== undefined) {
      init.body =
        typeof body === 'string' || body instanceof Uint8Array ? (body as string) : JSON.stringify(body);
      if (
        !('Content-Type' in (init.headers as Record<string, string>)) &&
        typeof body !== 'string' &&
        !(body instanceof Uint8Array)
      ) {
        (init.headers as Record<string, string>)['Content-Type'] = 'application/json';
      }
    }
    const res = await app.request(path, init);
    const text = await res.text();
    let json: Loose;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json };
  };

  const createAgent = async (key: string, body: unknown = {}) => {
    const res = await request(key, 'POST', '/v1/agents', body);
    if (res.status !== 201) throw new Error(`create agent: ${res.status} ${res.text}`);
    return res.json as { id: string; mode: string; preset: string };
  };

  const call = async (key: string, agentId: string, calls: unknown[]) =>
    request(key, 'POST', `/v1/agents/${agentId}/calls`, { calls });

  /** POST /calls asking for SSE (Accept: text/event-stream); the raw Response, to read as a stream. */
  const callStream = (key: string, agentId: string, calls: unknown[]): Promise<Response> =>
    Promise.resolve(
      app.request(`/v1/agents/${agentId}/calls`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${key}`,
          'Content-Type': 'application/json',
          Accept: 'text/event-stream',
        },
        body: JSON.stringify({ calls }),
      }),
    );

  const close = async () => {
    await tenantDeletion.close();
    await agents.close(0);
    await egress?.close();
    store.close();
  };

  return {
    app,
    store,
    registry,
    agents,
    sandboxes,
    metrics,
    lifecycle,
    egress,
    tenantDeletion,
    tenantA: a.id,
    tenantB: b.id,
    keyA: a.apiKey,
    keyB: b.apiKey,
    request,
    createAgent,
    call,
    callStream,
    close,
  };
};

export type Api = Awaited<ReturnType<typeof makeApi>>;
