// Pause and resume over real HTTP with real containers (issue 36): what a pause keeps and loses is
// what its answer said (stop: files kept, the background job and /tmp gone; freeze: the job
// carries on), a call to a paused agent resumes it or answers AGENT_PAUSED as the tenant's
// settings say, a pause during a running call is refused, idle agents pause by themselves, a
// paused agent stays paused across a restart (its stopped container and workspace kept by the
// adoption at start) and resumes on its next call, and another tenant's agent reads as unknown.
import { expect, it } from 'vitest';
import type { Running } from '../../../host/serve.ts';
import { until } from '../../helpers/until.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { json, served } from './served.ts';

const service = served('pause', { shutdownGraceMs: 300 });
const { fixture } = service;

async function tenant(server: Running, name: string): Promise<string> {
  return (await server.store.tenants.createTenant(name)).apiKey;
}

async function agentOf(server: Running, key: string): Promise<string> {
  return (await json(server, key, 'POST', '/v1/agents', {})).json.id;
}

/** One call through POST /calls: its HTTP status and its result. */
async function call(
  server: Running,
  key: string,
  id: string,
  name: string,
  args: Loose,
): Promise<{ status: number; result: Loose; body: Loose }> {
  const res = await json(server, key, 'POST', `/v1/agents/${id}/calls`, {
    calls: [{ id: `c${Math.random().toString(36).slice(2, 8)}`, name, arguments: args }],
  });
  return { status: res.status, result: res.json?.results?.[0], body: res.json };
}

const bash = (server: Running, key: string, id: string, command: string) =>
  call(server, key, id, 'bash', { command, description: 'test' });

const stateOf = async (server: Running, key: string, id: string): Promise<Loose> =>
  (await json(server, key, 'GET', `/v1/agents/${id}`)).json.state;

/** The agent's container as the engine sees it (running, paused). */
async function containerOf(id: string): Promise<{ Running: boolean; Paused: boolean } | undefined> {
  const list = await fixture.docker.listContainers({
    all: true,
    filters: { label: [`dsh.agent=${id}`] },
  });
  const found = list[0];
  if (found === undefined) return undefined;
  const info = await fixture.docker.getContainer(found.Id).inspect();
  return { Running: info.State.Running, Paused: info.State.Paused };
}

/** Starts a background job appending a line to ticks.txt every 100 ms; its job id. */
async function ticking(server: Running, key: string, id: string): Promise<string> {
  const started = await call(server, key, id, 'bash', {
    command: 'while true; do echo t >> ticks.txt; sleep 0.1; done',
    description: 'ticks',
    run_in_background: true,
  });
  expect(started.result.ok).toBe(true);
  return started.result.value.jobId;
}

const lines = async (server: Running, key: string, id: string): Promise<number> =>
  Number((await bash(server, key, id, 'wc -l < ticks.txt')).result.value.stdout.trim());

it('stop: the container stopped, files kept, the job and /tmp gone, as the answer says; idempotent', async () => {
  const server = await service.current();
  const key = await tenant(server, 'stop');
  const id = await agentOf(server, key);
  expect((await bash(server, key, id, 'echo kept > keep.txt && echo gone > /tmp/t.txt')).result.ok).toBe(
    true,
  );
  const jobId = await ticking(server, key, id);

  const paused = await json(server, key, 'POST', `/v1/agents/${id}/pause`);
  expect(paused.status).toBe(200);
  expect(paused.json).toMatchObject({
    agentId: id,
    paused: true,
    pause: { mode: 'stop', by: 'api' },
    kept: ['workspace files'],
    lost: expect.arrayContaining(['processes', 'background jobs', 'terminals', '/tmp']),
  });
  expect(await containerOf(id)).toMatchObject({ Running: false });
  expect(await stateOf(server, key, id)).toMatchObject({ sandbox: 'paused', pause: { mode: 'stop' } });
  const listed = (await json(server, key, 'GET', '/v1/agents')).json.agents.find((a: Loose) => a.id === id);
  expect(listed.state.sandbox).toBe('paused');
  // Pausing again changes nothing: the same pause.
  const again = await json(server, key, 'POST', `/v1/agents/${id}/pause`, { mode: 'freeze' });
  expect(again.json.pause).toEqual(paused.json.pause);

  const resumed = await json(server, key, 'POST', `/v1/agents/${id}/resume`);
  expect(resumed.json).toEqual({ agentId: id, paused: false });
  expect(await containerOf(id)).toMatchObject({ Running: true });
  expect((await json(server, key, 'POST', `/v1/agents/${id}/resume`)).json).toEqual({
    agentId: id,
    paused: false,
  });
  expect((await stateOf(server, key, id)).sandbox).not.toBe('paused');

  expect((await bash(server, key, id, 'cat keep.txt')).result.value.stdout).toBe('kept\n');
  expect((await bash(server, key, id, 'cat /tmp/t.txt 2>&1 || echo missing')).result.value.stdout).toContain(
    'missing',
  );
  const jobs = (await call(server, key, id, 'job_list', {})).result.value as Loose[];
  expect(jobs.find((j) => j.id === jobId && j.status === 'running')).toBeUndefined();
});

it('freeze: the background job and /tmp carry on after the resume', async () => {
  const server = await service.current();
  const key = await tenant(server, 'freeze');
  const id = await agentOf(server, key);
  expect((await bash(server, key, id, 'echo still > /tmp/t.txt')).result.ok).toBe(true);
  const jobId = await ticking(server, key, id);
  await until(async () => (await lines(server, key, id)) > 2, { what: 'the job to tick' });

  const paused = await json(server, key, 'POST', `/v1/agents/${id}/pause`, { mode: 'freeze' });
  expect(paused.json).toMatchObject({
    paused: true,
    pause: { mode: 'freeze' },
    kept: expect.arrayContaining(['processes', 'background jobs', '/tmp']),
    holds: ['memory'],
  });
  expect(await containerOf(id)).toEqual({ Running: true, Paused: true });

  // A call resumes it on the way (the tenant's default), and the job is still the same one, running.
  const before = await lines(server, key, id);
  expect(await containerOf(id)).toEqual({ Running: true, Paused: false });
  const jobs = (await call(server, key, id, 'job_list', {})).result.value as Loose[];
  expect(jobs.find((j) => j.id === jobId)?.status).toBe('running');
  await until(async () => (await lines(server, key, id)) > before + 2, { what: 'the job to tick on' });
  expect((await bash(server, key, id, 'cat /tmp/t.txt')).result.value.stdout).toBe('still\n');
  expect((await stateOf(server, key, id)).sandbox).not.toBe('paused');

  // A frozen agent is deleted whole, container and all.
  await json(server, key, 'POST', `/v1/agents/${id}/pause`, { mode: 'freeze' });
  expect(
    (
      await fetch(`${server.url}/v1/agents/${id}`, {
        method: 'DELETE',
        headers: { Authorization: `Bearer ${key}` },
      })
    ).status,
  ).toBe(204);
  expect(await containerOf(id)).toBeUndefined();
});

it("a call to a paused agent resumes it, or answers 409 AGENT_PAUSED where the tenant's settings say so", async () => {
  const server = await service.current();
  const key = await tenant(server, 'on-call');
  const id = await agentOf(server, key);
  expect((await bash(server, key, id, 'echo one > f.txt')).result.ok).toBe(true);

  await json(server, key, 'POST', `/v1/agents/${id}/pause`);
  const transparent = await bash(server, key, id, 'cat f.txt');
  expect(transparent.result.value.stdout).toBe('one\n');
  expect((await stateOf(server, key, id)).sandbox).not.toBe('paused');

  const log = { retentionDays: 0, retentionBytes: 0, deletedAgentHours: 168 };
  expect((await json(server, key, 'GET', '/v1/settings')).json).toEqual({
    pause: { idleSeconds: 0, onCall: 'resume' },
    log,
  });
  const put = await json(server, key, 'PUT', '/v1/settings', { pause: { onCall: 'refuse' } });
  expect(put.json).toEqual({ pause: { idleSeconds: 0, onCall: 'refuse' }, log });
  await json(server, key, 'POST', `/v1/agents/${id}/pause`);
  const refused = await bash(server, key, id, 'cat f.txt');
  expect(refused.status).toBe(409);
  expect(refused.body.error.code).toBe('AGENT_PAUSED');
  const file = await json(server, key, 'GET', `/v1/agents/${id}/files?path=f.txt`);
  expect(file.status).toBe(409);
  expect(file.json.error.code).toBe('AGENT_PAUSED');
  expect(await containerOf(id)).toMatchObject({ Running: false });

  await json(server, key, 'POST', `/v1/agents/${id}/resume`);
  expect((await bash(server, key, id, 'cat f.txt')).result.value.stdout).toBe('one\n');
});

it('a pause while a call runs answers 409 AGENT_BUSY; once it is done the pause goes through', async () => {
  const server = await service.current();
  const key = await tenant(server, 'busy');
  const id = await agentOf(server, key);
  expect((await bash(server, key, id, 'true')).result.ok).toBe(true);
  const running = bash(server, key, id, 'touch started; sleep 2; echo done');
  await until(async () => (await json(server, key, 'GET', `/v1/agents/${id}`)).json.state.batches > 0, {
    what: 'the call to run',
  });
  const refused = await json(server, key, 'POST', `/v1/agents/${id}/pause`);
  expect(refused.status).toBe(409);
  expect(refused.json.error.code).toBe('AGENT_BUSY');
  expect((await running).result.value.stdout).toBe('done\n');
  expect((await json(server, key, 'POST', `/v1/agents/${id}/pause`)).json.paused).toBe(true);
});

it("another tenant's agent reads as unknown; bad input is refused", async () => {
  const server = await service.current();
  const owner = await tenant(server, 'owner');
  const other = await tenant(server, 'other');
  const id = await agentOf(server, owner);
  for (const path of ['pause', 'resume']) {
    const res = await json(server, other, 'POST', `/v1/agents/${id}/${path}`);
    expect(res.status).toBe(404);
    expect(res.json.error.code).toBe('NOT_FOUND');
  }
  expect((await json(server, owner, 'POST', '/v1/agents/agt_nope/pause')).status).toBe(404);
  expect((await json(server, owner, 'POST', `/v1/agents/${id}/pause`, { mode: 'hibernate' })).status).toBe(
    400,
  );
  expect((await json(server, owner, 'POST', `/v1/agents/${id}/pause`, { mode: 'stop', x: 1 })).status).toBe(
    400,
  );
  expect((await json(server, owner, 'PUT', '/v1/settings', { pause: { idleSeconds: -1 } })).status).toBe(400);
  expect((await json(server, owner, 'PUT', '/v1/settings', { pause: { onCall: 'maybe' } })).status).toBe(400);
  // The other tenant's settings are its own.
  await json(server, other, 'PUT', '/v1/settings', { pause: { onCall: 'refuse' } });
  expect((await json(server, owner, 'GET', '/v1/settings')).json.pause.onCall).toBe('resume');
  expect((await stateOf(server, owner, id)).sandbox).toBe('none');
});

it("an idle agent pauses by itself after its tenant's idleSeconds", async () => {
  const server = await service.current();
  const key = await tenant(server, 'idle');
  const id = await agentOf(server, key);
  await json(server, key, 'PUT', '/v1/settings', { pause: { idleSeconds: 1 } });
  expect((await bash(server, key, id, 'echo idle > i.txt')).result.ok).toBe(true);
  const state = await until(
    async () => {
      const s = await stateOf(server, key, id);
      return s.sandbox === 'paused' ? s : undefined;
    },
    { what: 'the idle pause', timeoutMs: 30_000, intervalMs: 250 },
  );
  expect(state.pause).toMatchObject({ mode: 'stop', by: 'idle' });
  expect(await containerOf(id)).toMatchObject({ Running: false });
  expect((await bash(server, key, id, 'cat i.txt')).result.value.stdout).toBe('idle\n');
});

it('a paused agent stays paused across a restart, its container and workspace kept, and resumes on its next call', async () => {
  const first = await service.current();
  const key = await tenant(first, 'restart');
  const stopped = await agentOf(first, key);
  const frozen = await agentOf(first, key);
  for (const id of [stopped, frozen])
    expect((await bash(first, key, id, `echo ${id} > who.txt`)).result.ok).toBe(true);
  await json(first, key, 'POST', `/v1/agents/${stopped}/pause`);
  await json(first, key, 'POST', `/v1/agents/${frozen}/pause`, { mode: 'freeze' });
  await service.stop(first);

  // What the service runs at start: the adoption of this instance's containers, which keeps them.
  const adopter = fixture.provider();
  await adopter.adopt();
  await adopter.close();
  expect(await containerOf(stopped)).toMatchObject({ Running: false });
  expect(await containerOf(frozen)).toEqual({ Running: true, Paused: true });

  const second = await service.start();
  expect(await stateOf(second, key, stopped)).toMatchObject({ sandbox: 'paused', pause: { mode: 'stop' } });
  expect(await stateOf(second, key, frozen)).toMatchObject({ sandbox: 'paused', pause: { mode: 'freeze' } });
  for (const id of [stopped, frozen]) {
    expect((await bash(second, key, id, 'cat who.txt')).result.value.stdout).toBe(`${id}\n`);
    expect((await stateOf(second, key, id)).sandbox).not.toBe('paused');
    expect(await containerOf(id)).toEqual({ Running: true, Paused: false });
  }
});
