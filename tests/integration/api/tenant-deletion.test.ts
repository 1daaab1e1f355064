// Deleting a tenant with a running agent, over real HTTP and a real container: the tenant's key is
// refused at once, and once the background deletion is done its container and workspace are gone
// and GET /v1/tenants/:id says `deleted`; the other tenant's agent keeps running.
import { expect, it } from 'vitest';
import { LABEL_AGENT } from '../../../host/sandbox/docker/config.ts';
import { workspaceOf } from '../../../host/sandbox/docker/workspaces.ts';
import { until } from '../../helpers/until.ts';
import { TEST_LABEL } from '../sandbox/fixtures.ts';
import { json, served } from './served.ts';

const ADMIN = 'admin-key-for-the-tenant-deletion-test-0123';
const service = served('tenant-deletion', { adminKey: ADMIN });

it('deletes a tenant with a running agent: its container and workspace go, the other tenant stays', async () => {
  const server = await service.start();
  const { docker, runId } = service.fixture;
  const gone = await server.store.tenants.createTenant('gone');
  const kept = await server.store.tenants.createTenant('kept');
  const run = async (key: string) => {
    const agent = (await json(server, key, 'POST', '/v1/agents', { preset: 'standard' })).json;
    const ran = await json(server, key, 'POST', `/v1/agents/${agent.id}/calls`, {
      calls: [
        { id: 'b', name: 'bash', arguments: { command: 'echo hi > /workspace/a.txt', description: 'write' } },
      ],
    });
    expect(ran.json.results[0].ok, JSON.stringify(ran.json)).toBe(true);
    return agent.id as string;
  };
  const goneAgent = await run(gone.apiKey);
  const keptAgent = await run(kept.apiKey);
  const containersOf = async (agentId: string) =>
    docker.listContainers({
      all: true,
      filters: { label: [`${TEST_LABEL}=${runId}`, `${LABEL_AGENT}=${agentId}`] },
    });
  const [container] = await containersOf(goneAgent);
  expect(container?.State).toBe('running');
  const mount = workspaceOf(await docker.getContainer(container!.Id).inspect());
  expect(mount).toBeDefined();

  const deleted = await json(server, ADMIN, 'DELETE', `/v1/tenants/${gone.id}`);
  expect(deleted.status).toBe(202);
  expect((await json(server, gone.apiKey, 'GET', '/v1/agents')).status).toBe(401);
  await until(
    async () => (await json(server, ADMIN, 'GET', `/v1/tenants/${gone.id}`)).json.state === 'deleted',
    {
      what: 'the tenant deleted',
      timeoutMs: 60_000,
    },
  );
  expect(await containersOf(goneAgent)).toEqual([]);
  expect(await service.fixture.workspaces.exists(mount!)).toBe(false);
  expect(await server.store.tenantPurge.remaining(gone.id)).toEqual({});

  expect((await containersOf(keptAgent))[0]?.State).toBe('running');
  const again = await json(server, kept.apiKey, 'POST', `/v1/agents/${keptAgent}/calls`, {
    calls: [{ id: 'c', name: 'bash', arguments: { command: 'cat /workspace/a.txt', description: 'read' } }],
  });
  expect(again.json.results[0].ok).toBe(true);
}, 120_000);
