// Schedules (seed 000 `schedule_*`): the seed's examples verbatim, the checks on times, periods and
// counts, delivery as a `schedule.fired` event and a pending `reminder` request, durability across a
// control-plane restart (the same libsql file reopened by a new service), recurring schedules that
// stop when deleted, deletion with the agent, and the HTTP routes. Tests wait on events, never on time.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../../helpers/until.ts';
import type { Loose } from '../api/harness.ts';
import { startService, waitFor } from './helpers.ts';

const services: { stop(): Promise<void> }[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const s of services.splice(0)) await s.stop().catch(() => {});
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const start = (options: Parameters<typeof startService>[0] = {}) => {
  const service = startService(options);
  services.push(service);
  return service;
};
const tempDb = () => {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-schedules-'));
  dirs.push(dir);
  return join(dir, 'store.db');
};
const reminders = async (service: ReturnType<typeof startService>, agentId: string) =>
  (await service.store.requests.list(agentId)).filter((r) => r.kind === 'reminder');
const fired = async (service: ReturnType<typeof startService>, agentId: string) =>
  (await service.store.events.list(agentId, { limit: 5000 })).filter((e) => e.type === 'schedule.fired');

describe('the contract (seed 000)', () => {
  // 2026-08-01T00:00:00Z: the seed's `at` example is three weeks ahead.
  const now = () => Date.UTC(2026, 7, 1);

  it("takes the seed's examples verbatim", async () => {
    const s = start({ now });
    const tenant = (await s.store.tenants.createTenant('t')).id;
    const agent = await s.agents.create(tenant, { preset: 'standard' });
    const after = await s.call(agent, 'schedule_create', {
      prompt: 'Check whether the deployment completed.',
      after_seconds: 600,
    });
    expect(after.value).toMatchObject({
      kind: 'after',
      prompt: 'Check whether the deployment completed.',
      next_at: '2026-08-01T00:10:00.000Z',
      spec: { after_seconds: 600 },
    });
    const at = await s.call(agent, 'schedule_create', {
      prompt: 'Prepare the release report.',
      at: {
        date: '2026-08-21',
        time: '09:00:00',
        time_zone: 'Asia/Shanghai',
      },
    });
    // 09:00 in Shanghai (UTC+8) is 01:00 UTC.
    expect(at.value).toMatchObject({ kind: 'at', next_at: '2026-08-21T01:00:00.000Z' });
    const list = await s.call(agent, 'schedule_list', {});
    expect((list.value as Loose).map((x: Loose) => x.prompt)).toEqual([
      'Check whether the deployment completed.',
      'Prepare the release report.',
    ]);
    const { tools } = await s.agents.tools(agent);
    const create = tools.find((t) => t.name === 'schedule_create')!.parameters as Loose;
    expect(Object.keys(create.properties).sort()).toEqual(['after_seconds', 'at', 'every_seconds', 'prompt']);
    expect(create.required).toEqual(['prompt']);
    expect((tools.find((t) => t.name === 'schedule_delete')!.parameters as Loose).required).toEqual(['id']);
  });

  it('refuses anything but exactly one time, past or unknown times, short periods and too many schedules', async () => {
    const s = start({ now, schedules: { maxPerAgent: 2, minPeriodMs: 60_000 } });
    const tenant = (await s.store.tenants.createTenant('t')).id;
    const agent = await s.agents.create(tenant, { preset: 'standard' });
    const code = async (args: object) =>
      (await s.call(agent, 'schedule_create', { prompt: 'p', ...args })).error?.code;
    expect(await code({})).toBe('INVALID_ARGUMENTS');
    expect(await code({ after_seconds: 5, every_seconds: 60 })).toBe('INVALID_ARGUMENTS');
    expect(await code({ every_seconds: 10 })).toBe('INVALID_ARGUMENTS');
    expect(await code({ after_seconds: -1 })).toBe('INVALID_ARGUMENTS');
    expect(await code({ at: '2026-07-01T00:00:00Z' })).toBe('INVALID_ARGUMENTS');
    expect(await code({ at: '2026-09-01T09:00:00' })).toBe('INVALID_ARGUMENTS'); // no offset: ambiguous
    expect(await code({ at: { date: '2026-09-01', time: '09:00', time_zone: 'Mars/Olympus' } })).toBe(
      'INVALID_ARGUMENTS',
    );
    expect(await code({ at: { date: '2026-02-30', time: '09:00', time_zone: 'UTC' } })).toBe(
      'INVALID_ARGUMENTS',
    );
    expect(await code({ at: '2026-09-01T09:00:00+02:00' })).toBeUndefined();
    expect(await code({ every_seconds: 60 })).toBeUndefined();
    expect(await code({ after_seconds: 1 })).toBe('LIMIT_EXCEEDED');
  });
});

describe('delivery', () => {
  it('a reminder set for 2 s fires once, after a restart of the service in between', async () => {
    const path = tempDb();
    const first = startService({ path });
    const tenant = (await first.store.tenants.createTenant('t')).id;
    const agent = await first.agents.create(tenant, { preset: 'standard' });
    const created = await first.call(agent, 'schedule_create', {
      prompt: 'Look at the build.',
      after_seconds: 2,
    });
    expect(created.ok).toBe(true);
    await first.stop();

    const second = start({ path });
    const [reminder] = await waitFor('the reminder', async () => {
      const list = await reminders(second, agent.id);
      return list.length > 0 ? list : undefined;
    });
    expect(reminder).toMatchObject({
      kind: 'reminder',
      state: 'pending',
      payload: { prompt: 'Look at the build.', scheduleId: (created.value as Loose).id },
    });
    await second.store.events.flush();
    expect(await fired(second, agent.id)).toEqual([
      expect.objectContaining({
        surface: 'current',
        data: expect.objectContaining({ requestId: reminder!.id }),
      }),
    ]);
    // Fired once: it is gone, so nothing can fire it again.
    expect((await second.call(agent, 'schedule_list', {})).value).toEqual([]);
    expect(await reminders(second, agent.id)).toHaveLength(1);
    // The client answers it like any request.
    expect(await second.store.requests.answer(reminder!.id, { result: 'looked' })).toBe(true);
  });

  it('a schedule that fell due while the service was down fires once at start, a recurring one too', async () => {
    const path = tempDb();
    let clock = Date.UTC(2026, 7, 1);
    const first = startService({ path, now: () => clock });
    const tenant = (await first.store.tenants.createTenant('t')).id;
    const agent = await first.agents.create(tenant, { preset: 'standard' });
    await first.call(agent, 'schedule_create', { prompt: 'once', after_seconds: 60 });
    await first.call(agent, 'schedule_create', { prompt: 'hourly', every_seconds: 3600 });
    await first.stop();

    clock += 5 * 3600 * 1000; // down for five hours: five periods missed
    const second = start({ path, now: () => clock });
    const list = await waitFor('both reminders', async () => {
      const all = await reminders(second, agent.id);
      return all.length >= 2 ? all : undefined;
    });
    expect(list.map((r) => (r.payload as Loose).prompt).sort()).toEqual(['hourly', 'once']);
    const left = (await second.call(agent, 'schedule_list', {})).value as Loose;
    expect(left).toEqual([
      expect.objectContaining({
        prompt: 'hourly',
        fired: 1,
        next_at: new Date(clock + 3600_000).toISOString(),
      }),
    ]);
  });

  it('a recurring schedule fires repeatedly and stops when deleted', async () => {
    const s = start({ schedules: { minPeriodMs: 100 } });
    const tenant = (await s.store.tenants.createTenant('t')).id;
    const agent = await s.agents.create(tenant, { preset: 'standard' });
    const created = await s.call(agent, 'schedule_create', { prompt: 'tick', every_seconds: 0.1 });
    const id = (created.value as Loose).id;
    // Fires, not reminders: while its reminder is unanswered a recurring schedule makes no second one.
    const ticks = async () =>
      (await fired(s, agent.id)).filter((e) => (e.data as Loose).prompt === 'tick').length;
    await waitFor('three ticks', async () => ((await ticks()) >= 3 ? true : undefined));
    expect((await s.call(agent, 'schedule_delete', { id })).ok).toBe(true);
    const after = await ticks();
    // A one-shot schedule due many periods later: when it has fired, the deleted one would have too.
    await s.call(agent, 'schedule_create', { prompt: 'later', after_seconds: 1 });
    await waitFor('the later reminder', async () =>
      (await reminders(s, agent.id)).some((r) => (r.payload as Loose).prompt === 'later') ? true : undefined,
    );
    expect(await ticks()).toBe(after);
    expect((await s.call(agent, 'schedule_delete', { id })).error?.code).toBe('NOT_FOUND');
  });
});

describe('ownership', () => {
  it('schedules are deleted with their agent, and over HTTP (described in /openapi.json) only their own tenant reaches them', async () => {
    const s = start();
    const a = await s.store.tenants.createTenant('a');
    const b = await s.store.tenants.createTenant('b');
    const agent = await s.agents.create(a.id, { preset: 'standard' });
    const other = await s.agents.create(a.id, { preset: 'standard' });
    const created = await s.call(agent, 'schedule_create', { prompt: 'p', after_seconds: 3600 });
    const id = (created.value as Loose).id;
    const http = (key: string, method: string, path: string) =>
      s.app.request(path, { method, headers: { authorization: `Bearer ${key}` } });
    const listed = await http(a.apiKey, 'GET', `/v1/agents/${agent.id}/schedules`);
    expect(((await listed.json()) as Loose).schedules.map((x: Loose) => x.id)).toEqual([id]);
    expect((await http(b.apiKey, 'GET', `/v1/agents/${agent.id}/schedules`)).status).toBe(404);
    expect((await http(b.apiKey, 'DELETE', `/v1/agents/${agent.id}/schedules/${id}`)).status).toBe(404);
    expect((await s.call(other, 'schedule_delete', { id })).error?.code).toBe('NOT_FOUND');
    expect((await http(a.apiKey, 'DELETE', `/v1/agents/${agent.id}/schedules/${id}`)).status).toBe(204);
    expect((await http(a.apiKey, 'DELETE', `/v1/agents/${agent.id}/schedules/${id}`)).status).toBe(404);

    const openapi = (await (await s.app.request('/openapi.json')).json()) as Loose;
    expect(Object.keys(openapi.paths)).toEqual(
      expect.arrayContaining(['/v1/agents/{id}/schedules', '/v1/agents/{id}/schedules/{sid}']),
    );

    await s.call(agent, 'schedule_create', { prompt: 'q', after_seconds: 3600 });
    await s.agents.delete(a.id, agent.id);
    expect(await s.store.schedules.list(a.id, agent.id)).toEqual([]);
  });
});

describe('a schedule made while its agent is deleted', () => {
  // schedule_create's row is held back until the agent's deletion has swept its schedules (the
  // agent stamped deleted, its schedules removed): the row lands after the sweep.
  it('does not outlive the agent', async () => {
    const s = start();
    const tenant = (await s.store.tenants.createTenant('t')).id;
    const agent = await s.agents.create(tenant, { preset: 'standard' });
    const schedules = s.store.schedules;
    const create = schedules.create.bind(schedules);
    const deleteAgent = schedules.deleteAgent.bind(schedules);
    const { promise: creating, resolve: reached } = Promise.withResolvers<void>();
    const { promise: sweep, resolve: swept } = Promise.withResolvers<void>();
    let stored: Promise<unknown> | undefined;
    schedules.create = (input, max) => {
      if (input.agentId !== agent.id) return create(input, max);
      reached();
      stored = sweep.then(() => create(input, max));
      return stored as ReturnType<typeof create>;
    };
    schedules.deleteAgent = async (agentId) => {
      const removed = await deleteAgent(agentId);
      if (agentId === agent.id) swept();
      return removed;
    };
    const made = s.call(agent, 'schedule_create', { prompt: 'p', after_seconds: 3600 });
    await creating;
    await s.agents.delete(tenant, agent.id);
    // The call was aborted with its agent; its body goes on and stores the row after the sweep.
    expect((await made).ok).toBe(false);
    await stored;
    // Nothing of the agent's is left to fire (the scheduler's own store read, every agent's).
    await until(async () => (await schedules.due(Number.MAX_SAFE_INTEGER, 100)).length === 0, {
      what: 'the late schedule removed',
    });
  });
});
