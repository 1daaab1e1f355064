// The operator's `plugins` quota of a tenant (PUT /v1/tenants/:id/limits) caps the plugins its
// agents run at once in place of the service's maxRunningPerTenant: a start past it is refused
// with LIMIT_EXCEEDED naming maxRunningPerTenant and the tenant's own max, the other tenant keeps
// the service's cap, and a raise is effective at the next start (no restart). Over HTTP, real
// plugin workers, real isolates.
import { afterAll, expect, it } from 'vitest';
import { pluginService } from './plugin-service.ts';

const ADMIN = 'admin-key-for-plugin-quota-tests-0123';
const IDLE = "return { name: 'idle', apply() {} }";

const service = pluginService({ adminKey: ADMIN, limits: { maxRunningPerTenant: 12 } });
afterAll(async () => (await service).close());

it("caps a tenant's running plugins at its plugins quota, and follows a raise at once", async () => {
  const { request, keyA, keyB, tenantA, creator, run } = await service;
  const limit = (plugins: number) => request(ADMIN, 'PUT', `/v1/tenants/${tenantA}/limits`, { plugins });
  expect((await limit(2)).json).toMatchObject({ quotas: { plugins: 2 } });
  expect((await request(keyA, 'GET', '/v1/limits')).json.quotas).toEqual({ plugins: 2 });
  // A tenant cannot raise its own.
  expect((await request(keyA, 'PUT', `/v1/tenants/${tenantA}/limits`, { plugins: 100 })).status).toBe(401);

  const a = await creator(keyA);
  expect((await run(keyA, a, IDLE)).run).toMatchObject({ ok: true });
  expect((await run(keyA, a, IDLE)).run).toMatchObject({ ok: true });
  const refused = (await run(keyA, a, IDLE)).run;
  expect(refused).toMatchObject({
    ok: false,
    error: {
      code: 'LIMIT_EXCEEDED',
      message: expect.stringContaining(
        "This tenant's agents run 2 plugins, its most (maxRunningPerTenant 2)",
      ),
      data: { limit: 'maxRunningPerTenant', max: 2 },
    },
  });

  // The other tenant has the service's cap.
  const b = await creator(keyB);
  for (let i = 0; i < 3; i++) expect((await run(keyB, b, IDLE)).run).toMatchObject({ ok: true });

  // Raised: the next start is admitted, in this process at once.
  await limit(3);
  expect((await run(keyA, a, IDLE)).run).toMatchObject({ ok: true });
  expect((await run(keyA, a, IDLE)).run).toMatchObject({ ok: false, error: { data: { max: 3 } } });
});
