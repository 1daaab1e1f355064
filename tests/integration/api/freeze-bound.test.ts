// The operator's bound on a frozen pause (DSH_FREEZE_MAX_SECONDS, host/agents/service/freeze-bound.ts)
// over real HTTP with real containers: a freeze past it becomes a stop on the engine (the container
// stopped, no longer paused: its memory given back), the agent's pause a `stop` one since the
// freeze's moment, its workspace kept and its background job and /tmp lost, as a stop's; a call
// then resumes it. A freeze made under a service without the bound is stopped by the next start
// that has one (the sweep reads the records, not what this process froze).
import { expect, it } from 'vitest';
import type { Running } from '../../../host/serve.ts';
import { until } from '../../helpers/until.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { json, served } from './served.ts';

// Started without a bound (0); the second start below sets the smallest one, 1 s.
const service = served('freeze-bound', { shutdownGraceMs: 300, freezeMaxSeconds: 0 });
const { fixture } = service;

async function call(server: Running, key: string, id: string, name: string, args: Loose): Promise<Loose> {
  const res = await json(server, key, 'POST', `/v1/agents/${id}/calls`, {
    calls: [{ id: `c${Math.random().toString(36).slice(2, 8)}`, name, arguments: args }],
  });
  expect(res.status).toBe(200);
  return res.json.results[0];
}

const bash = (server: Running, key: string, id: string, command: string) =>
  call(server, key, id, 'bash', { command, description: 'test' });

const stateOf = async (server: Running, key: string, id: string): Promise<Loose> =>
  (await json(server, key, 'GET', `/v1/agents/${id}`)).json.state;

/** The agent's container as the engine sees it. */
async function containerOf(id: string): Promise<{ Running: boolean; Paused: boolean } | undefined> {
  const list = await fixture.docker.listContainers({ all: true, filters: { label: [`dsh.agent=${id}`] } });
  const found = list[0];
  if (found === undefined) return undefined;
  const info = await fixture.docker.getContainer(found.Id).inspect();
  return { Running: info.State.Running, Paused: info.State.Paused };
}

/** An agent with a file in its workspace, one in /tmp and a background job, then frozen; its freeze's moment. */
async function frozenAgent(server: Running, key: string): Promise<{ id: string; jobId: string; at: number }> {
  const id = (await json(server, key, 'POST', '/v1/agents', {})).json.id as string;
  expect((await bash(server, key, id, `echo ${id} > kept.txt && echo t > /tmp/t.txt`)).ok).toBe(true);
  const job = await call(server, key, id, 'bash', {
    command: 'sleep 600',
    description: 'a job a stop ends',
    run_in_background: true,
  });
  const paused = await json(server, key, 'POST', `/v1/agents/${id}/pause`, { mode: 'freeze' });
  expect(paused.json.pause.mode).toBe('freeze');
  expect(await containerOf(id)).toEqual({ Running: true, Paused: true });
  return { id, jobId: job.value.jobId, at: paused.json.pause.at };
}

/** Waits until the bound stopped the agent: its pause a stop since the freeze, its container stopped. */
async function stoppedByTheBound(server: Running, key: string, agent: { id: string; at: number }) {
  const state = await until(
    async () => {
      const s = await stateOf(server, key, agent.id);
      return s.pause?.mode === 'stop' && s;
    },
    { what: `the freeze of ${agent.id} to become a stop`, timeoutMs: 60_000 },
  );
  expect(state).toMatchObject({ sandbox: 'paused', pause: { mode: 'stop', at: agent.at } });
  expect(await containerOf(agent.id)).toMatchObject({ Running: false, Paused: false });
}

it('a freeze past DSH_FREEZE_MAX_SECONDS is stopped, workspace kept; one frozen before a start with the bound too', async () => {
  const first = await service.current();
  const key = (await first.store.tenants.createTenant('freeze-bound')).apiKey;
  // Frozen where no bound holds: it stays frozen until the service that has one starts.
  const before = await frozenAgent(first, key);
  await service.stop(first);

  service.config.freezeMaxSeconds = 1;
  const second = await service.start();
  await stoppedByTheBound(second, key, before);
  // And a freeze made under the bound.
  const during = await frozenAgent(second, key);
  await stoppedByTheBound(second, key, during);

  for (const agent of [before, during]) {
    // Its pause answers as a stop's: nothing held any more.
    const shown = (await json(second, key, 'POST', `/v1/agents/${agent.id}/pause`, { mode: 'freeze' })).json;
    expect(shown).toMatchObject({ pause: { mode: 'stop' }, holds: [] });
    // A call resumes it: the workspace kept; /tmp and the background job lost, as a stop's.
    const out = await bash(second, key, agent.id, 'cat kept.txt; cat /tmp/t.txt 2>/dev/null || echo no-tmp');
    expect(out.value.stdout).toBe(`${agent.id}\nno-tmp\n`);
    expect(await containerOf(agent.id)).toEqual({ Running: true, Paused: false });
    const jobs = (await call(second, key, agent.id, 'job_list', {})).value as Loose[];
    expect(jobs.find((j) => j.id === agent.jobId)?.status).not.toBe('running');
  }
});
