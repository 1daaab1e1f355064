// The surfaces of issues 32, 34 and 36 against a hostile tenant with a valid key (tenant A; tenant
// B exists), through the public HTTP API with real containers: pause and resume storms (with calls
// and another tenant among them), a frozen agent's other surfaces, snapshots (another tenant's, of
// a deleted agent, many in parallel against the byte quota, racing their agent's deletion, deleted
// while an agent is made from one), the disk quota of agents from snapshots and of forked children,
// log exports (another tenant's agents, exports left unread), hostile settings and bodies, and every
// admin route (limits, nodes and cordons, a tenant's agents and keys, workspaces) asked with a
// tenant key. Guarantee: nothing of B is reachable, the quotas hold, every answer is a stable code,
// the agent and the service stay consistent.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../helpers/until.ts';
import { loopWorkspaces } from '../sandbox/fixtures.ts';
import { type Harness, type Loose, startHarness, text } from './harness.ts';

const ADMIN = 'admin-key-for-the-adversarial-surfaces-0123456789';
let h: Harness;
beforeAll(async () => {
  // Wrong keys are part of the probes: the per-address throttle of failed keys is raised for them.
  h = await startHarness({ config: { adminKey: ADMIN, authFailures: 1000, workspaceMb: 64 } });
});
afterAll(() => h?.close());

/** A fresh tenant: its id and key (for quotas set through the admin route). */
const tenant = async (name: string): Promise<{ id: string; key: string }> => {
  const made = await h.server.store.tenants.createTenant(name);
  return { id: made.id, key: made.apiKey };
};

/** The agent's container as the engine sees it. */
const containerOf = async (id: string): Promise<{ Running: boolean; Paused: boolean }> => {
  const [found] = await h.fixture.docker.listContainers({
    all: true,
    filters: { label: [`dsh.agent=${id}`] },
  });
  const info = await h.fixture.docker.getContainer(found?.Id ?? '').inspect();
  return { Running: info.State.Running, Paused: info.State.Paused };
};

/** An error body with an id blanked, to compare "not yours" with "does not exist". */
const shape = (res: { status: number; text: string }, id: string) => ({
  status: res.status,
  body: res.text.replaceAll(id, '<ID>'),
});

const GHOST = `agt_${'x'.repeat(21)}`;

it('a storm of pauses, resumes and calls (and another tenant among them) leaves the agent consistent', async () => {
  const id = await h.agent(h.keyA);
  expect((await h.bash(h.keyA, id, 'echo kept > kept.txt')).ok).toBe(true);
  const asks: Promise<{ who: string; status: number; code?: string }>[] = [];
  for (let i = 0; i < 16; i++) {
    const path = ['pause', 'resume'][i % 2] as string;
    const body = path === 'pause' ? { mode: i % 4 === 0 ? 'freeze' : 'stop' } : undefined;
    asks.push(
      h.http(h.keyA, 'POST', `/v1/agents/${id}/${path}`, body).then((r) => ({
        who: `A ${path}`,
        status: r.status,
        code: r.json?.error?.code,
      })),
    );
    if (i % 4 === 1 || i % 4 === 2)
      asks.push(
        h.http(h.keyB, 'POST', `/v1/agents/${id}/${path}`, body).then((r) => ({
          who: `B ${path}`,
          status: r.status,
          code: r.json?.error?.code,
        })),
      );
    if (i % 4 === 3)
      asks.push(
        h
          .http(h.keyA, 'POST', `/v1/agents/${id}/calls`, {
            calls: [{ id: `c${i}`, name: 'read', arguments: { file_path: 'kept.txt' } }],
          })
          .then((r) => ({
            who: 'A call',
            status: r.status === 200 && r.json.results[0].ok ? 200 : r.status,
            code: r.json?.error?.code ?? r.json?.results?.[0]?.error?.code,
          })),
      );
  }
  const answers = await Promise.all(asks);
  for (const a of answers) {
    if (a.who.startsWith('B')) expect(a, a.who).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    // A pause may meet a call in flight (AGENT_BUSY), and the tenant's request rate may be spent
    // (RATE_LIMITED); nothing else is refused, nothing fails.
    else if (a.status !== 200)
      expect([`409 AGENT_BUSY`, `429 RATE_LIMITED`], a.who).toContain(`${a.status} ${a.code}`);
  }
  // Settled by one last resume: the record, the engine and a call agree.
  const resumed = await h.http(h.keyA, 'POST', `/v1/agents/${id}/resume`);
  expect(resumed.json).toMatchObject({ agentId: id, paused: false });
  const r = await h.bash(h.keyA, id, 'cat kept.txt');
  expect(text(r)).toContain('kept');
  expect(await containerOf(id)).toEqual({ Running: true, Paused: false });
  expect((await h.http(h.keyA, 'GET', `/v1/agents/${id}`)).json.state.paused ?? false).toBe(false);
  // B's pauses and resumes changed nothing of A's: B's own agent is untouched and listed alone.
  expect((await h.http(h.keyB, 'GET', '/v1/agents')).text).not.toContain(id);
});

it('a frozen agent answers every other surface (files, rollback, export, delete) instead of hanging', async () => {
  const id = await h.agent(h.keyA);
  const [w] = await h.calls(h.keyA, id, [['w', 'write', { file_path: 'a.txt', content: 'one' }]]);
  expect(w?.ok, text(w)).toBe(true);
  await h.calls(h.keyA, id, [['w2', 'write', { file_path: 'a.txt', content: 'two' }]]);
  const frozen = await h.http(h.keyA, 'POST', `/v1/agents/${id}/pause`, { mode: 'freeze' });
  expect(frozen.json).toMatchObject({ paused: true, pause: { mode: 'freeze' } });
  expect((await h.http(h.keyA, 'GET', `/v1/agents/${id}/events/export`)).status).toBe(200);
  // A rollback and a read are uses of the sandbox: they resume it (onCall: resume), then run.
  const back = await h.http(h.keyA, 'POST', `/v1/agents/${id}/rollback`, { callId: 'w2' });
  expect(back.status, back.text).toBe(200);
  expect((await h.http(h.keyA, 'GET', `/v1/agents/${id}/files?path=a.txt`)).text).toBe('one');
  await h.http(h.keyA, 'POST', `/v1/agents/${id}/pause`, { mode: 'freeze' });
  expect((await h.http(h.keyA, 'DELETE', `/v1/agents/${id}`)).status).toBe(204);
  await until(
    async () =>
      (await h.fixture.docker.listContainers({ all: true, filters: { label: [`dsh.agent=${id}`] } }))
        .length === 0,
    { what: 'the frozen agent container removed', timeoutMs: 30_000 },
  );
});

it("exports never carry another tenant's events, and name A's agents to B like unknown ones", async () => {
  const a = await h.agent(h.keyA);
  await h.bash(h.keyA, a, 'echo tenant-a-marker');
  const b = await h.agent(h.keyB);
  await h.bash(h.keyB, b, 'echo tenant-b-marker');
  for (const path of [`/v1/agents/${a}/events/export`, `/v1/agents/${a}/events/export?after=0`]) {
    const theirs = await h.http(h.keyB, 'GET', path);
    const nobody = await h.http(h.keyB, 'GET', path.replace(a, GHOST));
    expect(theirs.status).toBe(404);
    expect(shape(theirs, a)).toEqual(shape(nobody, GHOST));
  }
  const resumed = await h.http(h.keyB, 'GET', `/v1/events/export?agent=${a}&after=0`);
  const unknown = await h.http(h.keyB, 'GET', `/v1/events/export?agent=${GHOST}&after=0`);
  expect(resumed.status).toBe(404);
  expect(shape(resumed, a)).toEqual(shape(unknown, GHOST));
  const all = await h.http(h.keyB, 'GET', '/v1/events/export');
  expect(all.status).toBe(200);
  expect(all.text).toContain('tenant-b-marker');
  expect(all.text).not.toContain('tenant-a-marker');
  expect(all.text).not.toContain(a);
  for (const q of ['agent=../x', `agent=${b}&after=-1`, 'after=5', `agent=${b}&after=1e3`, 'agent=%00'])
    expect((await h.http(h.keyB, 'GET', `/v1/events/export?${q}`)).status, q).toBe(400);
});

it('exports left unread or broken off hold nothing: calls and other exports go on, and they end with their client', async () => {
  const id = await h.agent(h.keyA);
  const messages = Array.from({ length: 256 }, (_, i) => ({
    role: 'user',
    content: `m${i} ${'x'.repeat(200)}`,
  }));
  for (let i = 0; i < 6; i++)
    expect((await h.http(h.keyA, 'POST', `/v1/agents/${id}/messages`, { messages })).status).toBe(201);
  const url = `${h.server.url}/v1/agents/${id}/events/export`;
  const headers = { Authorization: `Bearer ${h.keyA}` };
  // Three exports whose client never reads past the headers, three broken off after a first chunk.
  const held = await Promise.all(
    Array.from({ length: 3 }, async () => {
      const controller = new AbortController();
      const res = await fetch(url, { headers, signal: controller.signal });
      expect(res.status).toBe(200);
      return controller;
    }),
  );
  for (let i = 0; i < 3; i++) {
    const controller = new AbortController();
    const res = await fetch(`${h.server.url}/v1/events/export`, { headers, signal: controller.signal });
    await res.body?.getReader().read();
    controller.abort();
  }
  // Meanwhile: a call, and a whole export of every line.
  expect((await h.bash(h.keyA, id, 'echo still-served')).ok).toBe(true);
  const whole = await h.http(h.keyA, 'GET', `/v1/agents/${id}/events/export`);
  const lines = whole.text.trim().split('\n');
  expect(lines.length).toBeGreaterThanOrEqual(6 * 256);
  const seqs = lines.map((l) => JSON.parse(l).seq as number);
  expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  for (const c of held) c.abort();
  expect((await h.http(h.keyA, 'GET', '/v1/health')).status).toBe(200);
});

it('hostile settings are refused and change nothing', async () => {
  const before = (await h.http(h.keyA, 'GET', '/v1/settings')).json;
  for (const body of [
    { checkpoints: { maxBytes: 2 ** 40 } },
    { checkpoints: { maxBytes: -1 } },
    { checkpoints: { maxCount: 1e9 } },
    { checkpoints: { maxCount: 1.5 } },
    { checkpoints: { tools: 'yes' } },
    { log: { retentionDays: -1 } },
    { log: { retentionBytes: Number.MAX_VALUE } },
    { log: { deletedAgentHours: 1e308 } },
    { pause: { idleSeconds: -5 } },
    { pause: { onCall: 'always' } },
    { tenantId: 'other' },
    [],
    'x',
  ]) {
    const res = await h.http(h.keyA, 'PUT', '/v1/settings', body);
    expect(res.status, JSON.stringify(body)).toBe(400);
  }
  expect((await h.http(h.keyA, 'GET', '/v1/settings')).json).toEqual(before);
  // An array is no object (valibot's object schemas took `[]` as `{}`): refused on every JSON body.
  const t = await tenant('arrays');
  await h.server.store.tenants.setQuotas(t.id, { agents: 3 });
  for (const [key, method, path] of [
    [h.keyA, 'PUT', '/v1/settings'],
    [h.keyA, 'POST', '/v1/agents'],
    [h.keyA, 'PUT', '/v1/egress'],
    [ADMIN, 'PUT', `/v1/tenants/${t.id}/limits`],
  ] as const) {
    const res = await h.http(key, method, path, []);
    expect(res.status, `${method} ${path}`).toBe(400);
    expect(res.json.error.code).toBe('BAD_REQUEST');
  }
  expect((await h.http(t.key, 'GET', '/v1/limits')).json.quotas).toEqual({ agents: 3 });
});

it('every admin route answers a tenant key like a wrong key, and changes nothing', async () => {
  const a = await tenant('admin-probe');
  const own = a.id;
  const routes: [string, string, unknown?][] = [
    ['PUT', `/v1/tenants/${own}/limits`, { agents: 1000, diskMb: 1e6, snapshotBytes: 2 ** 50 }],
    ['PUT', `/v1/tenants/${own}/limits`, {}],
    ['GET', `/v1/tenants/${own}/agents`],
    ['GET', `/v1/tenants/${own}`],
    ['GET', '/v1/tenants'],
    ['POST', '/v1/tenants', { name: 'mine' }],
    ['GET', `/v1/tenants/${own}/keys`],
    ['POST', `/v1/tenants/${own}/keys`, {}],
    ['DELETE', `/v1/tenants/${own}`],
    ['GET', '/v1/nodes'],
    ['POST', '/v1/nodes/local/cordon'],
    ['POST', '/v1/nodes/local/uncordon'],
    ['GET', '/v1/admin/workspaces'],
  ];
  await h.server.store.tenants.setQuotas(own, { agents: 2 });
  for (const [method, path, body] of routes) {
    const mine = await h.http(a.key, method, path, body);
    const wrong = await h.http('not-a-key-0123456789abcdef', method, path, body);
    expect(mine.status, `${method} ${path}`).toBe(401);
    expect(mine.text, `${method} ${path}`).toBe(wrong.text);
  }
  expect((await h.http(a.key, 'GET', '/v1/limits')).json.quotas).toEqual({ agents: 2 });
  expect((await h.http(ADMIN, 'GET', `/v1/tenants/${own}`)).json.state).toBe('active');
});

describe.skipIf(!loopWorkspaces)('snapshots (loop workspaces)', () => {
  const snapshotFiles = async (): Promise<string[]> =>
    (await readdir(join(h.fixture.workspacesDir ?? '', '.snapshots')).catch(() => [] as string[])).filter(
      (f) => f.endsWith('.img'),
    );

  it('many snapshots at once never pass the byte quota, and each one refused leaves no file', async () => {
    const t = await tenant('snap-flood');
    const id = await h.agent(t.key);
    expect((await h.bash(t.key, id, 'head -c 2000000 /dev/urandom > big.bin')).ok).toBe(true);
    const first = await h.http(t.key, 'POST', `/v1/agents/${id}/snapshots`);
    expect(first.status, first.text).toBe(201);
    const quota = Math.floor(first.json.bytes * 2.5);
    const set = await h.http(ADMIN, 'PUT', `/v1/tenants/${t.id}/limits`, { snapshotBytes: quota });
    expect(set.status, set.text).toBe(200);
    const flood = await Promise.all(
      Array.from({ length: 8 }, () => h.http(t.key, 'POST', `/v1/agents/${id}/snapshots`)),
    );
    for (const res of flood)
      if (res.status !== 201)
        expect(res.json.error, res.text).toMatchObject({
          code: 'LIMIT_EXCEEDED',
          data: { limit: 'snapshotBytes' },
        });
    const listed = (await h.http(t.key, 'GET', '/v1/snapshots')).json.snapshots as Loose[];
    const used = (await h.http(t.key, 'GET', '/v1/limits')).json.usage.snapshotBytes;
    expect(used).toBeLessThanOrEqual(quota);
    expect(listed.length).toBe(1 + flood.filter((r) => r.status === 201).length);
    const mine = new Set(listed.map((s) => `${s.id}.img`));
    expect((await snapshotFiles()).filter((f) => mine.has(f)).length).toBe(listed.length);
  });

  it("an agent made from a snapshot counts the snapshot's size against the disk quota, not the default's", async () => {
    // The default workspace is 64 MiB; the quota 128. A 96 MiB agent's snapshot, the agent gone.
    const t = await tenant('snap-disk');
    expect((await h.http(ADMIN, 'PUT', `/v1/tenants/${t.id}/limits`, { diskMb: 128 })).status).toBe(200);
    const big = await h.agent(t.key, { sandbox: { diskMb: 96 } });
    const snap = await h.http(t.key, 'POST', `/v1/agents/${big}/snapshots`);
    expect(snap.status, snap.text).toBe(201);
    expect((await h.http(t.key, 'DELETE', `/v1/agents/${big}`)).status).toBe(204);
    await h.agent(t.key); // 64 MiB: 64 of 128 used
    // 64 + 96 > 128: refused, as a request for 96 MiB would be.
    const refused = await h.http(t.key, 'POST', '/v1/agents', { fromSnapshot: snap.json.id });
    expect(refused.status, refused.text).toBe(400);
    expect(refused.json.error).toMatchObject({ code: 'LIMIT_EXCEEDED', data: { limit: 'diskMb', max: 128 } });
    const limits = (await h.http(t.key, 'GET', '/v1/limits')).json;
    expect(limits.usage.diskMb).toBeLessThanOrEqual(limits.quotas.diskMb);
  });

  it('children forked with workspaces of their own are held to the disk quota too', async () => {
    const t = await tenant('fork-disk');
    expect((await h.http(ADMIN, 'PUT', `/v1/tenants/${t.id}/limits`, { diskMb: 128 })).status).toBe(200);
    const parent = await h.agent(t.key, { subagents: true, childWorkspace: 'isolated' }); // 64 of 128
    const fork = () =>
      h.calls(t.key, parent, [
        ['f', 'subagent_fork', { description: 'fork', prompt: 'Go on.', run_in_background: true }],
      ]);
    const [first] = await fork(); // 128 of 128
    expect(first?.ok, text(first)).toBe(true);
    const [second] = await fork();
    expect(second?.ok, text(second)).toBe(false);
    expect(second?.error?.code, text(second)).toBe('LIMIT_EXCEEDED');
    const limits = (await h.http(t.key, 'GET', '/v1/limits')).json;
    expect(limits.usage.diskMb).toBeLessThanOrEqual(limits.quotas.diskMb);
  });

  it("a snapshot racing its agent's deletion answers a stable code and leaves no file without its row", async () => {
    const t = await tenant('snap-race');
    const before = new Set(await snapshotFiles());
    const outcomes: string[] = [];
    for (let round = 0; round < 4; round++) {
      const id = await h.agent(t.key);
      expect((await h.bash(t.key, id, 'head -c 1000000 /dev/urandom > f.bin')).ok).toBe(true);
      // Even rounds: the snapshot asked first; odd rounds: the deletion, the snapshot just after it.
      const del = () => h.http(t.key, 'DELETE', `/v1/agents/${id}`);
      const snap = () => h.http(t.key, 'POST', `/v1/agents/${id}/snapshots`);
      const [taken, deleted] =
        round % 2 === 0
          ? await Promise.all([snap(), del()])
          : await (async () => {
              const d = del();
              await new Promise((r) => setTimeout(r, 5 * round));
              return [await snap(), await d];
            })();
      expect(deleted.status, deleted.text).toBe(204);
      outcomes.push(taken.status === 201 ? '201' : `${taken.status} ${taken.json?.error?.code}`);
    }
    for (const outcome of outcomes) expect(['201', '404 NOT_FOUND', '409 AGENT_DELETING']).toContain(outcome);
    const rows = new Set(
      ((await h.http(t.key, 'GET', '/v1/snapshots')).json.snapshots as Loose[]).map((s) => `${s.id}.img`),
    );
    expect(rows.size).toBe(outcomes.filter((o) => o === '201').length);
    expect((await snapshotFiles()).filter((f) => !before.has(f)).sort()).toEqual([...rows].sort());
  });

  it("a deleted agent's snapshot stays its tenant's only; one deleted while agents are made from it leaves none broken", async () => {
    const a = await h.agent(h.keyA);
    expect((await h.bash(h.keyA, a, 'echo from-a > a.txt')).ok).toBe(true);
    const snap = (await h.http(h.keyA, 'POST', `/v1/agents/${a}/snapshots`)).json;
    expect((await h.http(h.keyA, 'DELETE', `/v1/agents/${a}`)).status).toBe(204);
    // The agent is gone: no new snapshot of it, for A or B.
    const again = await h.http(h.keyA, 'POST', `/v1/agents/${a}/snapshots`);
    expect(again.status).toBe(404);
    expect(shape(await h.http(h.keyB, 'POST', `/v1/agents/${a}/snapshots`), a)).toEqual(
      shape(await h.http(h.keyB, 'POST', `/v1/agents/${GHOST}/snapshots`), GHOST),
    );
    // Its snapshot is still A's alone.
    expect((await h.http(h.keyB, 'POST', '/v1/agents', { fromSnapshot: snap.id })).status).toBe(404);
    expect((await h.http(h.keyB, 'GET', `/v1/snapshots/${snap.id}`)).status).toBe(404);
    expect((await h.http(h.keyB, 'DELETE', `/v1/snapshots/${snap.id}`)).status).toBe(404);
    // Deleted while agents are made from it: each agent is refused (404) or starts with its files.
    const made = Promise.all(
      Array.from({ length: 4 }, () => h.http(h.keyA, 'POST', '/v1/agents', { fromSnapshot: snap.id })),
    );
    const deleted = await h.http(h.keyA, 'DELETE', `/v1/snapshots/${snap.id}`);
    expect(deleted.status).toBe(204);
    for (const res of await made) {
      if (res.status !== 201) {
        expect(res.json.error.code, res.text).toBe('NOT_FOUND');
        continue;
      }
      const r = await h.bash(h.keyA, res.json.id, 'cat a.txt');
      expect(text(r), res.json.id).toContain('from-a');
    }
    expect(await snapshotFiles()).not.toContain(`${snap.id}.img`);
  });
});
