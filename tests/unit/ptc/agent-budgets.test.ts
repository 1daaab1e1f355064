// The composed service (assembleAgents) with a real isolate host: an agent created with
// `codeMode` budgets gets them in its run_code description and its runs, within the service's
// maxima; a request over them is refused when the agent is created.
import { afterAll, describe, expect, it } from 'vitest';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import { createIsolateHost } from '../../../host/isolates/index.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import { openStore } from '../../../host/store/index.ts';
import { until } from '../../helpers/until.ts';
import { textOf } from './helpers.ts';

const isolates = createIsolateHost({ workers: 1, prewarm: 1 });
const store = openStore({ path: ':memory:' });
const { agents } = assembleAgents({
  store,
  sandboxes: createMemoryProvider(),
  isolates,
  codeMode: { defaults: { cpuMs: 200, wallMs: 300 }, maxima: { cpuMs: 1_000, wallMs: 5_000 } },
});
const tenant = (await store.tenants.createTenant('t')).id;
afterAll(async () => {
  await agents.close(0);
  store.close();
  await isolates.close();
});

const description = async (agent: Awaited<ReturnType<typeof agents.create>>) =>
  (await agents.tools(agent)).tools[0]?.description ?? '';

describe("an agent's codeMode", () => {
  it('states the service defaults to an agent that asked for nothing', async () => {
    const agent = await agents.create(tenant, { preset: 'code' });
    expect(await description(agent)).toContain(
      "Limits of one run: 200 ms of CPU time for the program's own work, 64 MB of memory, and 300 ms in all",
    );
  });

  it("gives an agent the wall clock it asked for: its program waits on a remote tool past the service's default", async () => {
    const agent = await agents.create(tenant, {
      preset: 'code',
      codeMode: { wallMs: 3_000 },
      remoteTools: [
        { name: 'client_lookup', description: 'Asks the client.', parameters: { type: 'object' } },
      ],
    });
    expect(await description(agent)).toContain('and 3 s in all');
    const call = agents.call(
      agent,
      [
        {
          id: 'c1',
          name: 'run_code',
          arguments: { code: 'return await tools.client_lookup({})', description: 'ask' },
        },
      ],
      { signal: new AbortController().signal },
    );
    const request = await until(async () => (await store.requests.list(agent.sessionId, 'pending'))[0]);
    // The behaviour under test: the client takes a second, longer than the service's 300 ms
    // default and within the agent's 3 s.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await store.requests.answer(request.id, { result: 'from the client' });
    const [result] = await call;
    expect(textOf(result?.content ?? [])).toBe('from the client');
  });

  it('refuses a request over the maxima when the agent is created', async () => {
    await expect(
      agents.create(tenant, { preset: 'code', codeMode: { wallMs: 60_000 } }),
    ).rejects.toMatchObject({
      code: 'INVALID_ARGUMENTS',
      message: "codeMode.wallMs is 60000 ms, over this service's maximum of 5000 ms; ask for at most that.",
    });
    expect((await agents.list(tenant)).every((a) => a.config.codeMode?.wallMs !== 60_000)).toBe(true);
  });
});
