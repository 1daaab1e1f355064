// Issue 32: an agent asks for a sandbox runtime (`sandbox: { runtime: "gvisor" }`) at creation. It
// gets it only where its tenant may use it (RUNTIME_NOT_ALLOWED) and the provider's engine offers
// it (RUNTIME_UNAVAILABLE), refused before anything is stored; its sandbox is made under it; the
// health route reports what the engine offers. The real engines: tests/integration/gvisor/.
import { afterEach, describe, expect, it } from 'vitest';
import { gvisorAccess } from '../../../host/agents/sandbox-runtime.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/index.ts';
import type { SandboxRuntime } from '../../../host/sandbox/runtimes.ts';
import type { SandboxSpec } from '../../../host/sandbox/types.ts';
import { type Api, makeApi } from './harness.ts';

let api: Api | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

/** A memory provider whose "engine" offers `offered`, recording the specs it is asked to make. */
const offering = (offered: SandboxRuntime[]) => {
  const specs: SandboxSpec[] = [];
  const provider = createMemoryProvider();
  const create = provider.create.bind(provider);
  return {
    specs,
    provider: Object.assign(provider, {
      runtimes: async () => offered,
      create: (spec: SandboxSpec) => {
        specs.push(spec);
        return create(spec);
      },
    }),
  };
};

const count = async (a: Api, key: string): Promise<number> =>
  (await a.request(key, 'GET', '/v1/agents')).json.agents.length;

describe('sandbox runtimes at agent creation', () => {
  it('a tenant the operator did not allow is refused gvisor (RUNTIME_NOT_ALLOWED), and no agent is made', async () => {
    const { provider } = offering(['runc', 'gvisor']);
    api = await makeApi({}, { sandboxes: provider });
    const res = await api.request(api.keyA, 'POST', '/v1/agents', { sandbox: { runtime: 'gvisor' } });
    expect(res.status).toBe(403);
    expect(res.json.error.code).toBe('RUNTIME_NOT_ALLOWED');
    expect(res.json.error.message).toMatch(/DSH_GVISOR_TENANTS/);
    expect(await count(api, api.keyA)).toBe(0);
    // runc, asked for by name or not at all, is every tenant's.
    await api.createAgent(api.keyA, { sandbox: { runtime: 'runc' } });
    await api.createAgent(api.keyA, {});
    expect(await count(api, api.keyA)).toBe(2);
  });

  it('an allowed tenant gets gvisor: its sandbox is made under it; another tenant still is refused', async () => {
    const { provider, specs } = offering(['runc', 'gvisor']);
    let allowed = '';
    api = await makeApi(
      {},
      { sandboxes: provider, agents: { runtimes: (tenantId) => gvisorAccess([allowed])(tenantId) } },
    );
    allowed = api.tenantA;
    const refused = await api.request(api.keyB, 'POST', '/v1/agents', { sandbox: { runtime: 'gvisor' } });
    expect(refused.json.error.code).toBe('RUNTIME_NOT_ALLOWED');
    const id = (await api.createAgent(api.keyA, { sandbox: { runtime: 'gvisor', memoryMb: 256 } })).id;
    const shown = (await api.request(api.keyA, 'GET', `/v1/agents/${id}`)).json;
    expect(shown.config.sandbox).toEqual({ runtime: 'gvisor', memoryMb: 256 });
    const res = await api.call(api.keyA, id, [
      { id: 'c1', name: 'write', arguments: { file_path: 'a.txt', content: 'x' } },
    ]);
    expect(res.status).toBe(200);
    expect(specs.map((s) => [s.agentId, s.runtime])).toEqual([[id, 'gvisor']]);
    // Its first sandbox: placement asks no node whether it holds it (NodeSandboxSpec.fresh).
    expect(specs[0]?.fresh).toBe(true);
  });

  it('the access setting: * allows every tenant, a list only the tenants it names', async () => {
    expect(gvisorAccess('*')('t1')).toEqual(['gvisor']);
    expect(gvisorAccess(['t1', 't2'])('t2')).toEqual(['gvisor']);
    expect(gvisorAccess(['t1'])('t3')).toEqual([]);
    expect(gvisorAccess([])('t1')).toEqual([]);
  });

  it('an engine that does not offer gvisor refuses it (RUNTIME_UNAVAILABLE) with what it offers', async () => {
    const { provider } = offering(['runc']);
    api = await makeApi({}, { sandboxes: provider, agents: { runtimes: gvisorAccess('*') } });
    const res = await api.request(api.keyA, 'POST', '/v1/agents', { sandbox: { runtime: 'gvisor' } });
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe('RUNTIME_UNAVAILABLE');
    expect(res.json.error.data).toEqual({ runtime: 'gvisor', offered: ['runc'] });
    expect(await count(api, api.keyA)).toBe(0);
  });

  it('a provider that cannot tell (no runtimes()) offers runc alone', async () => {
    api = await makeApi({}, { agents: { runtimes: gvisorAccess('*') } });
    const res = await api.request(api.keyA, 'POST', '/v1/agents', { sandbox: { runtime: 'gvisor' } });
    expect(res.json.error.code).toBe('RUNTIME_UNAVAILABLE');
  });

  it('hostile values are refused by the schema: engine names, other runtimes, non-strings', async () => {
    api = await makeApi({}, { agents: { runtimes: gvisorAccess('*') } });
    for (const runtime of ['runsc', 'host', 'kata', 'GVISOR', '', 1, null, ['gvisor'], { name: 'gvisor' }]) {
      const res = await api.request(api.keyA, 'POST', '/v1/agents', { sandbox: { runtime } });
      expect(res.status, JSON.stringify(runtime)).toBe(400);
      expect(res.json.error.code, JSON.stringify(runtime)).toBe('BAD_REQUEST');
    }
    expect(await count(api, api.keyA)).toBe(0);
  });

  it('health reports the runtimes the engine offers, and leaves them out when they cannot be read', async () => {
    api = await makeApi({}, { app: { runtimes: async () => ['runc', 'gvisor'] } });
    expect((await api.request(undefined, 'GET', '/v1/health')).json.runtimes).toEqual(['runc', 'gvisor']);
    await api.close();
    api = await makeApi({}, { app: { runtimes: async () => Promise.reject(new Error('engine down')) } });
    const health = await api.request(undefined, 'GET', '/v1/health');
    expect(health.status).toBe(200);
    expect(health.json.runtimes).toBeUndefined();
  });
});
