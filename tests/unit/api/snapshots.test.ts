// Snapshots through the public API on a service whose sandboxes have none (the memory provider,
// like Docker volumes): every snapshot route and `fromSnapshot` answer 501 SNAPSHOT_UNSUPPORTED
// with nothing made, GET /v1/limits leaves the snapshot usage out, hostile ids are refused before
// the service is asked, and the snapshotBytes quota is set and validated like the agents one.
// (Snapshots themselves: tests/integration/api/snapshots.test.ts, with real containers.)
import { afterEach, beforeEach, expect, it } from 'vitest';
import { ADMIN_KEY, type Api, makeApi } from './harness.ts';

let api: Api;
beforeEach(async () => {
  api = await makeApi();
});
afterEach(async () => {
  await api.close();
});

it('answers 501 SNAPSHOT_UNSUPPORTED where the sandboxes have no snapshots, and makes nothing', async () => {
  const { id } = await api.createAgent(api.keyA);
  for (const [method, path, body] of [
    ['POST', `/v1/agents/${id}/snapshots`, undefined],
    ['GET', `/v1/agents/${id}/snapshots`, undefined],
    ['GET', '/v1/snapshots', undefined],
    ['GET', '/v1/snapshots/snap_x', undefined],
    ['DELETE', '/v1/snapshots/snap_x', undefined],
    ['POST', '/v1/agents', { fromSnapshot: 'snap_x' }],
  ] as const) {
    const res = await api.request(api.keyA, method, path, body);
    expect(res.status, `${method} ${path}`).toBe(501);
    expect(res.json.error.code).toBe('SNAPSHOT_UNSUPPORTED');
  }
  expect((await api.request(api.keyA, 'GET', '/v1/agents')).json.agents).toHaveLength(1);
  expect((await api.request(api.keyA, 'GET', '/v1/limits')).json).toEqual({
    quotas: {},
    usage: { agents: 1, diskMb: 1024, logBytes: expect.any(Number) },
  });
});

it("refuses hostile ids, another tenant's agent and no key before anything is asked", async () => {
  const { id } = await api.createAgent(api.keyA);
  for (const fromSnapshot of ['../x', '.snapshots', '', 'a/b', 'x'.repeat(200), 7, null])
    expect((await api.request(api.keyA, 'POST', '/v1/agents', { fromSnapshot })).status).toBe(400);
  expect((await api.request(api.keyA, 'GET', '/v1/snapshots/..%2Fx')).status).toBe(404);
  expect((await api.request(api.keyB, 'POST', `/v1/agents/${id}/snapshots`)).status).toBe(404);
  expect((await api.request(undefined, 'GET', '/v1/snapshots')).status).toBe(401);
  expect((await api.request(undefined, 'POST', `/v1/agents/${id}/snapshots`)).status).toBe(401);
});

it('sets the snapshotBytes quota like the agents one, and refuses hostile values', async () => {
  const set = await api.request(ADMIN_KEY, 'PUT', `/v1/tenants/${api.tenantA}/limits`, {
    agents: 3,
    snapshotBytes: 5 * 1024 ** 3,
  });
  expect(set.json.quotas).toEqual({ agents: 3, snapshotBytes: 5 * 1024 ** 3 });
  expect((await api.request(api.keyA, 'GET', '/v1/limits')).json.quotas).toEqual({
    agents: 3,
    snapshotBytes: 5 * 1024 ** 3,
  });
  for (const snapshotBytes of [-1, 1.5, '2', 2 ** 60, null])
    expect(
      (await api.request(ADMIN_KEY, 'PUT', `/v1/tenants/${api.tenantA}/limits`, { snapshotBytes })).status,
    ).toBe(400);
});
