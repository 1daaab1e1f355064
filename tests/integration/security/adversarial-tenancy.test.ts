// Adversarial pass over tenancy, quotas and lifecycle, from outside through the public HTTP API:
// limits raced by concurrent requests, a tenant deleted while its requests are in flight, keys
// revoked under a client, and another tenant's ids in every position. A limit two concurrent
// requests can both pass, or a row that outlives its tenant, is a defect.
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { until } from '../../helpers/until.ts';
import { readSse } from '../../unit/api/sse.ts';
import { type Harness, type Loose, startHarness, tarOf, text } from './harness.ts';

const ADMIN = 'admin-key-for-the-adversarial-tenancy-0123456789';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ config: { adminKey: ADMIN, authFailures: 1000, workspaceMb: 64 } });
});
afterAll(() => h?.close());

/** A fresh tenant of its own (id and key), so that quotas and deletions touch nobody else. */
const tenant = async (name: string): Promise<{ id: string; key: string }> => {
  const res = await h.http(ADMIN, 'POST', '/v1/tenants', { name });
  expect(res.status, res.text).toBe(201);
  return { id: res.json.id, key: res.json.apiKey };
};

const liveAgents = async (tenantId: string): Promise<Loose[]> =>
  (await h.server.store.agents.list(tenantId)) as Loose[];

describe('quotas under concurrency', () => {
  it('many concurrent creates never pass the agents quota', async () => {
    const t = await tenant('quota-agents');
    expect((await h.http(ADMIN, 'PUT', `/v1/tenants/${t.id}/limits`, { agents: 3 })).status).toBe(200);
    const answers = await Promise.all(
      Array.from({ length: 24 }, () => h.http(t.key, 'POST', '/v1/agents', { preset: 'minimal' })),
    );
    const made = answers.filter((r) => r.status === 201);
    expect(made).toHaveLength(3);
    for (const r of answers.filter((r) => r.status !== 201)) {
      expect(r.status).toBe(400);
      expect(r.json.error.code).toBe('LIMIT_EXCEEDED');
      expect(r.json.error.data).toEqual({ limit: 'agents', max: 3 });
    }
    expect(await liveAgents(t.id)).toHaveLength(3);
  });

  it('another spelling of the create route does not skip the quota', async () => {
    const t = await tenant('quota-spelling');
    expect((await h.http(ADMIN, 'PUT', `/v1/tenants/${t.id}/limits`, { agents: 0 })).status).toBe(200);
    for (const path of ['/v1/agents/', '/v1//agents', '/v1/agents?x=1', '/v1/Agents', '/v1/%61gents']) {
      const res = await h.http(t.key, 'POST', path, { preset: 'minimal' });
      expect(res.status, `${path}: ${res.text}`).not.toBe(201);
      expect(res.status, path).toBeLessThan(500);
    }
    expect(await liveAgents(t.id)).toHaveLength(0);
  });

  it('concurrent creates never pass the disk quota', async () => {
    const t = await tenant('quota-disk');
    expect((await h.http(ADMIN, 'PUT', `/v1/tenants/${t.id}/limits`, { diskMb: 100 })).status).toBe(200);
    const answers = await Promise.all(
      Array.from({ length: 12 }, () =>
        h.http(t.key, 'POST', '/v1/agents', { preset: 'minimal', sandbox: { diskMb: 32 } }),
      ),
    );
    expect(answers.filter((r) => r.status === 201)).toHaveLength(3);
    const limits = await h.http(t.key, 'GET', '/v1/limits');
    expect(limits.json.usage.diskMb).toBe(96);
  });

  it('an idempotency key sent many times at once runs its batch once', async () => {
    const t = await tenant('idem');
    const id = await h.agent(t.key, { preset: 'standard' });
    const body = {
      calls: [
        {
          id: 'c',
          name: 'bash',
          arguments: { command: 'echo x >> runs.txt; wc -l < runs.txt', description: 'count' },
        },
      ],
    };
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        h.http(t.key, 'POST', `/v1/agents/${id}/calls`, body, { 'Idempotency-Key': 'same-key' }),
      ),
    );
    for (const r of answers) expect(r.status, r.text).toBe(200);
    const ran = await h.bash(t.key, id, 'wc -l < runs.txt');
    expect(text(ran).trim()).toBe('1');
    expect(new Set(answers.map((r) => JSON.stringify(r.json.results)))).toHaveProperty('size', 1);
  });

  it('concurrent batches never take the durable log past its byte budget by more than their results', async () => {
    const t = await tenant('log-budget');
    const id = await h.agent(t.key, { preset: 'standard' });
    const budget = 200_000;
    expect((await h.http(ADMIN, 'PUT', `/v1/tenants/${t.id}/limits`, { logBytes: budget })).status).toBe(200);
    const arg = 'y'.repeat(12_000); // under the 16 KiB of a stored payload: inline in each event
    const answers = await Promise.all(
      // 16 at once (the tenant's request slots), 3 calls each: about 580 KB of arguments.
      Array.from({ length: 16 }, (_, i) =>
        h.http(t.key, 'POST', `/v1/agents/${id}/calls`, {
          calls: [0, 1, 2].map((j) => ({
            id: `c${i}-${j}`,
            name: 'bash',
            arguments: { command: `true ${arg}`, description: 'fill' },
          })),
        }),
      ),
    );
    for (const r of answers) expect(r.status, r.text).toBeLessThan(500);
    const results = answers.flatMap((r) => (r.status === 200 ? (r.json.results as Loose[]) : []));
    const ran = results.filter((r) => r.ok).length;
    const refused = answers.filter(
      (r) =>
        r.json?.error?.code === 'STORE_BUDGET_EXCEEDED' ||
        (r.json?.results ?? []).some((x: Loose) => x.error?.code === 'STORE_BUDGET_EXCEEDED'),
    ).length;
    expect(ran).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
    await h.server.store.events.flush();
    const used = (await h.http(t.key, 'GET', '/v1/limits')).json.usage.logBytes as number;
    // Every call that ran is in the log with its arguments.
    const logged = (await h.server.store.events.list(id, { limit: 5000 })).filter(
      (e) => e.type === 'tool.call',
    );
    expect(logged).toHaveLength(ran);
    // Calls admitted fit the budget; only results of calls already admitted may go past it (small here).
    expect(used, `ran ${ran}, refused ${refused}`).toBeLessThanOrEqual(budget + ran * 2_000);
  });

  it('one idempotency key with different bodies at once runs one of them; the others are 422', async () => {
    const t = await tenant('idem-bodies');
    const id = await h.agent(t.key, { preset: 'standard' });
    const body = (i: number) => ({
      calls: [
        { id: 'c', name: 'bash', arguments: { command: `echo ${i} >> runs.txt`, description: 'count' } },
      ],
    });
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        h.http(t.key, 'POST', `/v1/agents/${id}/calls`, body(i), { 'Idempotency-Key': 'k-bodies' }),
      ),
    );
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses, answers.map((r) => r.text).join('\n')).toEqual([200, 422, 422, 422, 422, 422]);
    for (const r of answers.filter((x) => x.status === 422))
      expect(r.json.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(text(await h.bash(t.key, id, 'wc -l < runs.txt')).trim()).toBe('1');
    // Scoped to the agent: another agent of the tenant runs its own batch under the same key.
    const other = await h.agent(t.key, { preset: 'standard' });
    const again = await h.http(t.key, 'POST', `/v1/agents/${other}/calls`, body(0), {
      'Idempotency-Key': 'k-bodies',
    });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
  });
});

/** A request whose headers go now and whose body only when `finish` is called (it is authenticated meanwhile). */
const slowRequest = (
  method: string,
  path: string,
  key: string,
  body: string | Uint8Array,
  contentType = 'application/json',
) => {
  const bytes = Buffer.from(body);
  const url = new URL(`${h.server.url}${path}`);
  let answer!: Promise<{ status: number; text: string }>;
  const req = httpRequest({
    host: url.hostname,
    port: url.port,
    path: url.pathname + url.search,
    method,
    headers: {
      Authorization: `Bearer ${key}`,
      'Content-Type': contentType,
      'Content-Length': String(bytes.length),
    },
  });
  answer = new Promise((resolve, reject) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
  });
  req.write(bytes.subarray(0, 1));
  return {
    answer,
    finish: () => {
      req.end(bytes.subarray(1));
      return answer;
    },
  };
};

describe('children under concurrency', () => {
  it('concurrent batches of background subagents never pass the per-agent bounds', async () => {
    const t = await tenant('children');
    const parent = await h.agent(t.key, { preset: 'standard', subagents: true });
    const batch = (n: number, tag: string) =>
      h.http(t.key, 'POST', `/v1/agents/${parent}/calls`, {
        calls: Array.from({ length: n }, (_, i) => ({
          id: `${tag}${i}`,
          name: 'subagent',
          arguments: { description: 'd', prompt: 'p', run_in_background: true },
        })),
      });
    const answers = await Promise.all([batch(12, 'a'), batch(12, 'b'), batch(12, 'c')]);
    const results = answers.flatMap((r) => r.json.results as Loose[]);
    const made = results.filter((r) => r.ok);
    const refused = results.filter((r) => !r.ok);
    for (const r of refused) expect(r.error.code, JSON.stringify(r)).toBe('CHILD_LIMIT_EXCEEDED');
    const children = await h.http(t.key, 'GET', `/v1/agents/${parent}/children`);
    expect(made.length).toBeLessThanOrEqual(8); // DSH_CONCURRENT_CHILDREN's default
    expect(children.json.agents.length).toBe(made.length);
  });
});

describe('per-agent bounds under concurrency', () => {
  it('schedules made by concurrent batches never pass DSH_SCHEDULES_PER_AGENT', async () => {
    const t = await tenant('schedules');
    const id = await h.agent(t.key, { preset: 'standard' });
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        h.http(t.key, 'POST', `/v1/agents/${id}/calls`, {
          calls: [0, 1, 2, 3].map((j) => ({
            id: `s${i}-${j}`,
            name: 'schedule_create',
            arguments: { prompt: `p${i}-${j}`, after_seconds: 3600 },
          })),
        }),
      ),
    );
    const results = answers.flatMap((r) => r.json.results as Loose[]);
    const made = results.filter((r) => r.ok).length;
    for (const r of results.filter((x) => !x.ok))
      expect(r.error.code, JSON.stringify(r)).toBe('LIMIT_EXCEEDED');
    const listed = (await h.http(t.key, 'GET', `/v1/agents/${id}/schedules`)).json.schedules as Loose[];
    expect(listed.length).toBe(made);
    expect(made).toBe(32);
  });

  it('tasks made on one team board by concurrent batches never pass DSH_TEAM_BOARD_TASKS', async () => {
    const t = await tenant('board');
    const id = await h.agent(t.key, { preset: 'standard', teams: true });
    const answers = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        h.http(t.key, 'POST', `/v1/agents/${id}/calls`, {
          calls: Array.from({ length: 34 }, (_, j) => ({
            id: `t${i}-${j}`,
            name: 'team_task_create',
            arguments: { subject: `s${i}-${j}`, description: 'd' },
          })),
        }),
      ),
    );
    const results = answers.flatMap((r) => r.json.results as Loose[]);
    const made = results.filter((r) => r.ok).length;
    for (const r of results.filter((x) => !x.ok))
      expect(r.error.code, JSON.stringify(r)).toBe('LIMIT_EXCEEDED');
    expect(made).toBe(500);
  });

  it('remote tools registered by concurrent requests never pass 128 per agent', async () => {
    const t = await tenant('remote-tools');
    const id = await h.agent(t.key, { preset: 'standard' });
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        h.http(t.key, 'POST', `/v1/agents/${id}/remote-tools`, {
          tools: Array.from({ length: 40 }, (_, j) => ({
            name: `rt_${i}_${j}`,
            description: 'd',
            parameters: { type: 'object' },
          })),
        }),
      ),
    );
    // Three fit (120 tools); the others are refused whole.
    expect(answers.filter((r) => r.status === 200)).toHaveLength(3);
    for (const r of answers.filter((x) => x.status !== 200)) {
      expect(r.status).toBe(400);
      expect(r.json.error.code).toBe('LIMIT_EXCEEDED');
      expect(r.json.error.data).toEqual({ limit: 'remoteTools', max: 128 });
    }
    const tools = (await h.http(t.key, 'GET', `/v1/agents/${id}/tools`)).json.tools as Loose[];
    expect(tools.filter((x) => String(x.name).startsWith('rt_'))).toHaveLength(120);
    // Re-registering names it has replaces them: room is needed only for new ones.
    const again = await h.http(t.key, 'POST', `/v1/agents/${id}/remote-tools`, {
      tools: tools
        .filter((x) => String(x.name).startsWith('rt_'))
        .map((x) => ({ name: x.name, description: 'again', parameters: { type: 'object' } })),
    });
    expect(again.status, again.text).toBe(200);
  });
});

describe('the same thing changed by concurrent requests', () => {
  it('concurrent uploads of one skill leave one whole version, never a mix', async () => {
    const t = await tenant('skill-race');
    const versions = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        tarOf([
          { header: { name: 'SKILL.md' }, body: `---\nname: racy\ndescription: version ${i}\n---\nv${i}\n` },
          ...Array.from({ length: 5 }, (_, j) => ({ header: { name: `v${i}/f${j}.txt` }, body: `${i}` })),
        ]),
      ),
    );
    const answers = await Promise.all(
      versions.map((tar) =>
        h.http(t.key, 'PUT', '/v1/skills/racy', tar, { 'Content-Type': 'application/x-tar' }),
      ),
    );
    for (const r of answers) expect([200, 201], r.text).toContain(r.status);
    const skill = (await h.http(t.key, 'GET', '/v1/skills/racy')).json;
    const version = /version (\d)/.exec(skill.description)?.[1];
    const paths = (skill.files as Loose[]).map((f) => f.path as string).filter((p) => p !== 'SKILL.md');
    expect(paths.sort()).toEqual(Array.from({ length: 5 }, (_, j) => `v${version}/f${j}.txt`));
  });

  it('an agent or a tenant deleted twice at once answers each delete cleanly', async () => {
    const t = await tenant('double-delete');
    const agent = await h.agent(t.key, { preset: 'standard' });
    expect((await h.bash(t.key, agent, 'echo warm')).ok).toBe(true);
    const twice = await Promise.all([
      h.http(t.key, 'DELETE', `/v1/agents/${agent}`),
      h.http(t.key, 'DELETE', `/v1/agents/${agent}`),
    ]);
    const statuses = twice.map((r) => r.status).sort();
    expect(statuses[0]).toBe(204);
    expect([204, 404]).toContain(statuses[1]);
    const tenantTwice = await Promise.all([
      h.http(ADMIN, 'DELETE', `/v1/tenants/${t.id}`),
      h.http(ADMIN, 'DELETE', `/v1/tenants/${t.id}`),
    ]);
    for (const r of tenantTwice) expect(r.status, r.text).toBe(202);
    await until(async () => (await h.http(ADMIN, 'GET', `/v1/tenants/${t.id}`)).json.state === 'deleted', {
      what: 'the tenant to be deleted',
      timeoutMs: 30_000,
    });
  });
});

describe('a tenant deleted while its requests are in flight', () => {
  it('a create authenticated before the delete leaves no live agent once the tenant is deleted', async () => {
    const t = await tenant('deleting-creates');
    const pending = Array.from({ length: 4 }, () =>
      slowRequest('POST', '/v1/agents', t.key, JSON.stringify({ preset: 'minimal' })),
    );
    await new Promise((r) => setTimeout(r, 300)); // headers in, key checked
    const del = await h.http(ADMIN, 'DELETE', `/v1/tenants/${t.id}`);
    expect(del.status).toBe(202);
    await until(async () => (await h.http(ADMIN, 'GET', `/v1/tenants/${t.id}`)).json.state === 'deleted', {
      what: 'the tenant to be deleted',
      timeoutMs: 30_000,
    });
    const answers = await Promise.all(pending.map((p) => p.finish()));
    // Answered as the key now is, and what they made goes with the tenant.
    for (const r of answers) expect(r.status, r.text).toBe(401);
    await until(async () => (await liveAgents(t.id)).length === 0, {
      what: 'the late agents to be deleted',
      timeoutMs: 30_000,
    });
  });

  it('skills, egress settings (with a credential) and settings written by requests in flight do not outlive the tenant', async () => {
    const t = await tenant('deleting-writes');
    const skill = await tarOf([
      { header: { name: 'SKILL.md' }, body: '---\nname: late\ndescription: written late\n---\nhi\n' },
    ]);
    const pending = [
      slowRequest('PUT', '/v1/skills/late', t.key, skill, 'application/x-tar'),
      slowRequest(
        'PUT',
        '/v1/egress',
        t.key,
        JSON.stringify({
          allow: [{ host: 'example.test' }],
          credentials: [
            { name: 'c', host: 'example.test', header: 'Authorization', value: 'Bearer late-secret' },
          ],
        }),
      ),
      slowRequest('PUT', '/v1/settings', t.key, JSON.stringify({ log: { retentionDays: 3 } })),
    ];
    await new Promise((r) => setTimeout(r, 300));
    expect((await h.http(ADMIN, 'DELETE', `/v1/tenants/${t.id}`)).status).toBe(202);
    await until(async () => (await h.http(ADMIN, 'GET', `/v1/tenants/${t.id}`)).json.state === 'deleted', {
      what: 'the tenant to be deleted',
      timeoutMs: 30_000,
    });
    const answers = await Promise.all(pending.map((p) => p.finish()));
    for (const r of answers) expect(r.status, r.text).toBe(401);
    await until(async () => Object.keys(await h.server.store.tenantPurge.remaining(t.id)).length === 0, {
      what: 'the late rows to be purged',
      timeoutMs: 30_000,
    });
  });
});

describe('a tenant deleted while its agents are busy', () => {
  it('ends its calls, commands, streams and sockets with stable answers; another tenant carries on', async () => {
    const t = await tenant('busy');
    const other = await tenant('busy-other');
    const agent = await h.agent(t.key, { preset: 'standard' });
    const otherAgent = await h.agent(other.key, { preset: 'standard' });
    const [job] = await h.calls(t.key, agent, [
      ['j', 'bash', { command: 'sleep 600', description: 'job', run_in_background: true }],
    ]);
    expect(job.ok, JSON.stringify(job)).toBe(true);
    const term = await h.http(t.key, 'POST', `/v1/agents/${agent}/terminals`, { command: ['sleep', '600'] });
    expect(term.status, term.text).toBe(201);
    const ws = new WebSocket(
      `${h.server.url.replace('http', 'ws')}/v1/agents/${agent}/terminals/${term.json.id}`,
      [],
      {
        headers: { Authorization: `Bearer ${t.key}` },
      },
    );
    const wsClosed = new Promise<number>((r) => ws.on('close', (code) => r(code)));
    const stream = await fetch(`${h.server.url}/v1/agents/${agent}/events`, {
      headers: { Authorization: `Bearer ${t.key}`, Accept: 'text/event-stream' },
    });
    const streamEnded = readSse(stream.body as ReadableStream<Uint8Array>);
    const call = h.http(t.key, 'POST', `/v1/agents/${agent}/calls`, {
      calls: [{ id: 'long', name: 'bash', arguments: { command: 'sleep 600', description: 'long' } }],
    });
    const exec = h.http(t.key, 'POST', `/v1/agents/${agent}/exec`, { command: 'sleep 600' });
    const otherCall = h.http(other.key, 'POST', `/v1/agents/${otherAgent}/calls`, {
      calls: [
        { id: 'o', name: 'bash', arguments: { command: 'sleep 3; echo other-done', description: 'other' } },
      ],
    });
    await new Promise((r) => setTimeout(r, 1000));
    expect((await h.http(ADMIN, 'DELETE', `/v1/tenants/${t.id}`)).status).toBe(202);
    const guard = <T>(p: Promise<T>) =>
      Promise.race([p, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 30_000))]);
    const [callRes, execRes, wsCode, streamDone] = await Promise.all([
      guard(call),
      guard(exec),
      guard(wsClosed),
      guard(streamEnded.then(() => 'ended')),
    ]);
    expect(callRes).not.toBe('hung');
    expect(execRes).not.toBe('hung');
    expect(wsCode).not.toBe('hung');
    expect(streamDone).toBe('ended');
    const c = callRes as Awaited<typeof call>;
    expect(c.status, c.text).toBeLessThan(500);
    if (c.status === 200) expect(typeof c.json.results[0].error?.code).toBe('string');
    const e = execRes as Awaited<typeof exec>;
    expect(e.status, e.text).toBe(404);
    await until(async () => (await h.http(ADMIN, 'GET', `/v1/tenants/${t.id}`)).json.state === 'deleted', {
      what: 'the tenant to be deleted',
      timeoutMs: 60_000,
    });
    const left = await h.fixture.docker.listContainers({
      all: true,
      filters: { label: [`dsh.agent=${agent}`] },
    });
    expect(left).toEqual([]);
    const o = await otherCall;
    expect(o.json.results[0].ok, o.text).toBe(true);
    expect(text(o.json.results[0])).toContain('other-done');
  });
});

describe('an agent deleted while requests to it are in flight', () => {
  it('a download read slowly ends (it never hangs) once its agent is deleted, and the agent leaves nothing', async () => {
    const t = await tenant('download-delete');
    const agent = await h.agent(t.key, { preset: 'standard', sandbox: { diskMb: 512 } });
    const fill = await h.bash(t.key, agent, 'head -c 200000000 /dev/urandom > big.bin && echo ok', 120_000);
    expect(text(fill)).toContain('ok');
    for (const path of ['/archive?path=.', '/files?path=big.bin']) {
      const res = await fetch(`${h.server.url}/v1/agents/${agent}${path}`, {
        headers: { Authorization: `Bearer ${t.key}` },
      });
      expect(res.status).toBe(200);
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      await reader.read(); // started, then left unread while the agent goes
      if (path.startsWith('/files')) {
        expect((await h.http(t.key, 'DELETE', `/v1/agents/${agent}`)).status).toBe(204);
      }
      const drained = (async () => {
        for (;;) {
          const { done } = await reader.read().catch(() => ({ done: true }));
          if (done) return 'ended';
        }
      })();
      if (path.startsWith('/archive')) {
        // The archive is read to its end meanwhile: another request works beside it.
        expect((await h.http(t.key, 'GET', `/v1/agents/${agent}`)).status).toBe(200);
      }
      const outcome = await Promise.race([drained, new Promise((r) => setTimeout(() => r('hung'), 30_000))]);
      expect(outcome, path).toBe('ended');
    }
    const left = await h.fixture.docker.listContainers({
      all: true,
      filters: { label: [`dsh.agent=${agent}`] },
    });
    expect(left).toEqual([]);
  });

  it('uploads, commands, terminals and servers whose bodies arrive after the delete touch nothing and leave no container', async () => {
    const t = await tenant('agent-late');
    const agent = await h.agent(t.key, { preset: 'standard' });
    expect((await h.bash(t.key, agent, 'echo warm')).ok).toBe(true); // a container exists
    const tar = await tarOf([{ header: { name: 'late-archive.txt' }, body: 'x' }]);
    const base = `/v1/agents/${agent}`;
    const pending = [
      slowRequest('PUT', `${base}/files?path=late.txt`, t.key, 'late bytes', 'application/octet-stream'),
      slowRequest('PUT', `${base}/archive?path=.`, t.key, tar, 'application/x-tar'),
      slowRequest('POST', `${base}/exec`, t.key, JSON.stringify({ command: 'echo ran > late-exec.txt' })),
      slowRequest('POST', `${base}/terminals`, t.key, JSON.stringify({ command: ['sleep', '600'] })),
      slowRequest(
        'POST',
        `${base}/mcp-servers`,
        t.key,
        JSON.stringify({ name: 'late', command: ['sleep', '600'] }),
      ),
      slowRequest(
        'POST',
        `${base}/calls`,
        t.key,
        JSON.stringify({
          calls: [{ id: 'c', name: 'bash', arguments: { command: 'touch late-call', description: 'late' } }],
        }),
      ),
      slowRequest(
        'POST',
        `${base}/messages`,
        t.key,
        JSON.stringify({ messages: [{ role: 'user', content: 'late' }] }),
      ),
      slowRequest(
        'POST',
        `${base}/remote-tools`,
        t.key,
        JSON.stringify({ tools: [{ name: 'late', description: 'd', parameters: { type: 'object' } }] }),
      ),
      slowRequest('PUT', `${base}/plan-mode`, t.key, JSON.stringify({ planMode: true })),
      slowRequest('POST', `${base}/pause`, t.key, JSON.stringify({})),
    ];
    await new Promise((r) => setTimeout(r, 300));
    expect((await h.http(t.key, 'DELETE', base)).status).toBe(204);
    const answers = await Promise.all(pending.map((p) => p.finish()));
    const summary = answers.map((r, i) => `${i}: ${r.status} ${r.text.slice(0, 160)}`);
    for (const r of answers) expect(r.status, summary.join('\n')).toBeLessThan(500);
    for (const r of answers) expect([404, 409], summary.join('\n')).toContain(r.status);
    await new Promise((r) => setTimeout(r, 1000));
    const left = await h.fixture.docker.listContainers({
      all: true,
      filters: { label: [`dsh.agent=${agent}`] },
    });
    expect(left).toEqual([]);
  });
});

describe("another tenant's ids in tool arguments and nested paths", () => {
  it('session, schedule, team and child tools of B never reach A, and nested ids answer like unknown ones', async () => {
    const a = await tenant('ids-a');
    const b = await tenant('ids-b');
    const agentA = await h.agent(a.key, { preset: 'standard', subagents: true, teams: true });
    const agentB = await h.agent(b.key, { preset: 'standard', subagents: true, teams: true });
    const [sched, child, task] = await h.calls(a.key, agentA, [
      ['s', 'schedule_create', { prompt: 'tenant-a-secret-prompt', after_seconds: 3600 }],
      ['c', 'subagent', { description: 'd', prompt: 'tenant-a-secret-child', run_in_background: true }],
      ['t', 'team_task_create', { subject: 'tenant-a-secret-task', description: 'x' }],
    ]);
    expect(sched.ok && child.ok && task.ok, JSON.stringify([sched, child, task])).toBe(true);
    const scheduleId = sched.value.id as string;
    const childId = child.value.agent_id as string;
    await h.server.store.events.flush();
    const probes = await h.calls(b.key, agentB, [
      ['1', 'session_event_read', { session_id: agentA, seq: 1 }],
      ['2', 'session_event_search', { session_id: agentA, query: 'secret' }],
      ['3', 'session_event_trace', { session_id: agentA, seq: 1 }],
      ['4', 'session_search', { query: 'secret', session_ids: [agentA, childId] }],
      ['5', 'session_search', { query: 'secret', parent_session_ids: [agentA] }],
      ['6', 'session_trace', { session_id: agentA }],
      ['7', 'schedule_delete', { id: scheduleId }],
      ['8', 'send_message', { target: childId, message: 'from b' }],
      ['9', 'interrupt_agent', { target: childId }],
      ['10', 'followup_task', { target: agentA, message: 'from b' }],
      ['11', 'team_task_get', { task_id: '1' }],
      ['12', 'list_agents', {}],
    ]);
    const all = JSON.stringify(probes);
    expect(all).not.toContain('tenant-a-secret');
    // Refused like unknown ids (the answers name only what B sent), found nothing in searches.
    for (const i of [0, 1, 2, 5, 6, 7, 8, 9, 10]) expect(probes[i].ok, JSON.stringify(probes[i])).toBe(false);
    expect(probes[3].value.sessions).toEqual([]);
    expect(probes[4].value.sessions).toEqual([]);
    expect(probes[11].value.agents.map((x: Loose) => x.agent_id)).toEqual([agentB]);
    // Nested ids through B's own agent: A's schedule, child and task stay A's.
    for (const [method, path] of [
      ['DELETE', `/v1/agents/${agentB}/schedules/${scheduleId}`],
      ['GET', `/v1/agents/${childId}/children`],
      ['POST', `/v1/agents/${childId}/mailbox/take`],
      ['GET', `/v1/agents/${childId}/mailbox`],
      ['GET', `/v1/agents/${agentA}/schedules`],
      ['GET', `/v1/agents/${agentA}/todos`],
      ['GET', `/v1/agents/${agentA}/goal`],
      ['GET', `/v1/agents/${agentA}/checkpoints`],
      ['POST', `/v1/agents/${agentA}/rollback`],
      ['GET', `/v1/agents/${agentA}/usage`],
      ['GET', `/v1/agents/${agentA}/snapshots`],
      ['POST', `/v1/agents/${agentA}/steps`],
      ['GET', `/v1/agents/${agentA}/plugins`],
      ['GET', `/v1/agents/${agentA}/mcp-servers`],
      ['GET', `/v1/agents/${agentA}/plan-mode`],
      ['POST', `/v1/agents/${agentA}/pause`],
      ['POST', `/v1/agents/${agentA}/resume`],
      ['GET', `/v1/agents/${agentA}/events/export`],
      ['GET', `/v1/events/export?agent=${agentA}`],
      ['GET', `/v1/agents/${agentA}/mcp`],
    ] as const) {
      const res = await h.http(b.key, method, path, method === 'POST' ? {} : undefined);
      expect(res.status, `${method} ${path}: ${res.text}`).toBeGreaterThanOrEqual(400);
      expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(500);
      expect(res.text, path).not.toContain('tenant-a-secret');
    }
    const left = await h.calls(a.key, agentA, [
      ['l', 'schedule_list', {}],
      ['g', 'team_task_get', { task_id: '1' }],
    ]);
    expect(JSON.stringify(left[0].value)).toContain(scheduleId);
    expect(left[1].ok, JSON.stringify(left[1])).toBe(true);
  });
});

describe('a snapshot racing deletions', () => {
  it('a snapshot whose copy is under way when its agent is deleted is not kept', async () => {
    const t = await tenant('snap-race');
    const agent = await h.agent(t.key, { preset: 'standard', sandbox: { diskMb: 512 } });
    const fill = await h.bash(
      t.key,
      agent,
      'head -c 300000000 /dev/urandom > big.bin && sync && echo ok',
      120_000,
    );
    expect(text(fill)).toContain('ok');
    const snap = h.http(t.key, 'POST', `/v1/agents/${agent}/snapshots`);
    await new Promise((r) => setTimeout(r, 150));
    expect((await h.http(t.key, 'DELETE', `/v1/agents/${agent}`)).status).toBe(204);
    const res = await snap;
    const listed = (await h.http(t.key, 'GET', '/v1/snapshots')).json.snapshots as Loose[];
    // Either it was taken before the delete (kept: snapshots outlive their agent) or refused.
    if (res.status === 201) expect(listed.map((x) => x.id)).toEqual([res.json.id]);
    else {
      expect(res.status, res.text).toBe(404);
      expect(listed).toEqual([]);
    }
  });

  it('a snapshot under way when its tenant is deleted is not left behind', async () => {
    const t = await tenant('snap-tenant-race');
    const agent = await h.agent(t.key, { preset: 'standard', sandbox: { diskMb: 512 } });
    const fill = await h.bash(
      t.key,
      agent,
      'head -c 300000000 /dev/urandom > big.bin && sync && echo ok',
      120_000,
    );
    expect(text(fill)).toContain('ok');
    const snap = h.http(t.key, 'POST', `/v1/agents/${agent}/snapshots`);
    await new Promise((r) => setTimeout(r, 150));
    expect((await h.http(ADMIN, 'DELETE', `/v1/tenants/${t.id}`)).status).toBe(202);
    const res = await snap;
    expect(res.status, res.text).toBeLessThan(500);
    await until(async () => (await h.http(ADMIN, 'GET', `/v1/tenants/${t.id}`)).json.state === 'deleted', {
      what: 'the tenant to be deleted',
      timeoutMs: 60_000,
    });
    expect(await h.server.store.snapshots?.list(t.id)).toEqual([]);
  });
});

describe('keys', () => {
  it('a revoked key is refused at once, also on a stream it had opened', async () => {
    const t = await tenant('revoke');
    const agent = await h.agent(t.key, { preset: 'standard' });
    const second = await h.http(t.key, 'POST', '/v1/keys', { name: 'second' });
    expect(second.status).toBe(201);
    // A stream opened with the key before its revocation.
    const stream = await fetch(`${h.server.url}/v1/agents/${agent}/events`, {
      headers: { Authorization: `Bearer ${second.json.apiKey}`, Accept: 'text/event-stream' },
    });
    expect(stream.status).toBe(200);
    const reading = readSse(stream.body as ReadableStream<Uint8Array>, (m) =>
      JSON.stringify(m).includes('after-revocation-secret'),
    );
    const del = await h.http(t.key, 'DELETE', `/v1/keys/${second.json.id}`);
    expect(del.status).toBe(204);
    expect((await h.http(second.json.apiKey, 'GET', '/v1/agents')).status).toBe(401);
    // The stream it had open ends too (within its recheck), before anything else is logged.
    const ended = await Promise.race([
      reading.then(() => 'ended'),
      new Promise((r) => setTimeout(() => r('still open'), 5000)),
    ]);
    expect(ended).toBe('ended');
    await h.bash(t.key, agent, 'echo after-revocation-secret');
    expect(JSON.stringify(await reading)).not.toContain('after-revocation-secret');
    await stream.body?.cancel().catch(() => undefined);
  });

  it("an MCP client's notification stream ends when its key is revoked", async () => {
    const t = await tenant('revoke-mcp');
    const agent = await h.agent(t.key, { preset: 'standard' });
    const second = await h.http(t.key, 'POST', '/v1/keys', {});
    const stream = await fetch(`${h.server.url}/v1/agents/${agent}/mcp`, {
      headers: { Authorization: `Bearer ${second.json.apiKey}`, Accept: 'text/event-stream' },
    });
    expect(stream.status).toBe(200);
    const reading = readSse(stream.body as ReadableStream<Uint8Array>);
    expect((await h.http(t.key, 'DELETE', `/v1/keys/${second.json.id}`)).status).toBe(204);
    const ended = await Promise.race([
      reading.then(() => 'ended'),
      new Promise((r) => setTimeout(() => r('still open'), 5000)),
    ]);
    expect(ended).toBe('ended');
  });

  it('a stream opened with a key that expires ends when it expires', async () => {
    const t = await tenant('expiry');
    const agent = await h.agent(t.key, { preset: 'standard' });
    const short = await h.http(t.key, 'POST', '/v1/keys', { expiresAt: Date.now() + 1500 });
    expect(short.status, short.text).toBe(201);
    const stream = await fetch(`${h.server.url}/v1/agents/${agent}/events`, {
      headers: { Authorization: `Bearer ${short.json.apiKey}`, Accept: 'text/event-stream' },
    });
    expect(stream.status).toBe(200);
    const reading = readSse(stream.body as ReadableStream<Uint8Array>);
    const ended = await Promise.race([
      reading.then(() => 'ended'),
      new Promise((r) => setTimeout(() => r('still open'), 6000)),
    ]);
    expect(ended).toBe('ended');
    expect((await h.http(short.json.apiKey, 'GET', '/v1/agents')).status).toBe(401);
  });

  it('a terminal socket attached with a key is closed when the key is revoked', async () => {
    const t = await tenant('revoke-terminal');
    const agent = await h.agent(t.key, { preset: 'standard' });
    const second = await h.http(t.key, 'POST', '/v1/keys', {});
    const opened = await h.http(t.key, 'POST', `/v1/agents/${agent}/terminals`, {});
    expect(opened.status, opened.text).toBe(201);
    const url = `${h.server.url.replace('http', 'ws')}/v1/agents/${agent}/terminals/${opened.json.id}`;
    const ws = new WebSocket(url, [], { headers: { Authorization: `Bearer ${second.json.apiKey}` } });
    const closed = new Promise<number>((r) => ws.on('close', (code) => r(code)));
    await new Promise((resolve, reject) => {
      ws.on('open', resolve);
      ws.on('error', reject);
    });
    expect((await h.http(t.key, 'DELETE', `/v1/keys/${second.json.id}`)).status).toBe(204);
    const code = await Promise.race([closed, new Promise((r) => setTimeout(() => r('still open'), 5000))]);
    expect(code).toBe(1008);
    // Nothing typed after the revocation reaches the shell.
    ws.send(Buffer.from('touch typed-after-revocation\n'));
    const ls = await h.http(t.key, 'POST', `/v1/agents/${agent}/exec`, { command: 'sleep 1; ls' });
    expect(ls.json.stdout).not.toContain('typed-after-revocation');
  });

  it('a tenant cannot make live keys without bound, not even all at once', async () => {
    const t = await tenant('key-flood');
    const answers = await Promise.all(
      Array.from({ length: 120 }, () => h.http(t.key, 'POST', '/v1/keys', {})),
    );
    const made = answers.filter((r) => r.status === 201).length;
    expect(made).toBe(99); // 100 live keys with the first
    for (const r of answers.filter((x) => x.status !== 201)) {
      expect(r.status).toBe(400);
      expect(r.json.error.code).toBe('LIMIT_EXCEEDED');
      expect(r.json.error.data).toEqual({ limit: 'keys', max: 100 });
    }
    // Revoking one makes room for one.
    const list = (await h.http(t.key, 'GET', '/v1/keys')).json.keys as Loose[];
    const other = list.find((k) => !k.revokedAt && k.prefix !== t.key.slice(0, 12));
    expect((await h.http(t.key, 'DELETE', `/v1/keys/${other?.id}`)).status).toBe(204);
    expect((await h.http(t.key, 'POST', '/v1/keys', {})).status).toBe(201);
    expect((await h.http(t.key, 'POST', '/v1/keys', {})).status).toBe(400);
  });

  it("another tenant's key id answers like an unknown one, and is not revoked", async () => {
    const a = await tenant('keys-a');
    const b = await tenant('keys-b');
    const aKeys = await h.http(a.key, 'GET', '/v1/keys');
    const aKeyId = aKeys.json.keys[0].id as string;
    const theirs = await h.http(b.key, 'DELETE', `/v1/keys/${aKeyId}?lastKey=true`);
    const nobody = await h.http(b.key, 'DELETE', `/v1/keys/key_${'z'.repeat(20)}?lastKey=true`);
    expect(theirs.status).toBe(404);
    expect(theirs.json.error.code).toBe(nobody.json.error.code);
    expect((await h.http(a.key, 'GET', '/v1/agents')).status).toBe(200);
  });

  it('two concurrent revokes of a tenant’s two last keys never leave it with none', async () => {
    const t = await tenant('revoke-race');
    const second = await h.http(t.key, 'POST', '/v1/keys', {});
    const ids = (await h.http(t.key, 'GET', '/v1/keys')).json.keys.map((k: Loose) => k.id as string);
    expect(ids).toHaveLength(2);
    const [r1, r2] = await Promise.all([
      h.http(t.key, 'DELETE', `/v1/keys/${ids[0]}`),
      h.http(second.json.apiKey, 'DELETE', `/v1/keys/${ids[1]}`),
    ]);
    expect([r1.status, r2.status].sort()).toEqual([204, 409]);
  });
});

/** Values a picky client sends where a number, a string or an object is expected (raw JSON). */
const ODD = [
  '1e400',
  '-1e400',
  '-1',
  '-0',
  '1.5',
  '9007199254740993',
  '"12"',
  'null',
  '[]',
  '{}',
  'true',
  '"\\u0000"',
  '"a\\u0000b"',
  '"\\ud800"',
  '"../../etc"',
  `"${'x'.repeat(100_000)}"`,
];

describe('odd values in every field answer a clear 4xx, never a 500', () => {
  it('bodies and queries across the tenant and admin routes', async () => {
    const t = await tenant('odd-values');
    const agent = await h.agent(t.key, { preset: 'creator' });
    const bodies: [string, string, (v: string) => string, string?][] = [
      ['POST', '/v1/agents', (v) => `{"sandbox":{"memoryMb":${v}}}`],
      ['POST', '/v1/agents', (v) => `{"sandbox":{"cpus":${v}}}`],
      ['POST', '/v1/agents', (v) => `{"sandbox":{"pids":${v}}}`],
      ['POST', '/v1/agents', (v) => `{"sandbox":{"diskMb":${v}}}`],
      ['POST', '/v1/agents', (v) => `{"sandbox":{"runtime":${v}}}`],
      ['POST', '/v1/agents', (v) => `{"codeMode":{"cpuMs":${v}}}`],
      ['POST', '/v1/agents', (v) => `{"codeMode":{"wallMs":${v}}}`],
      ['POST', '/v1/agents', (v) => `{"preset":${v}}`],
      ['POST', '/v1/agents', (v) => `{"mode":${v}}`],
      ['POST', '/v1/agents', (v) => `{"fromSnapshot":${v}}`],
      ['POST', '/v1/agents', (v) => `{"egress":{"allow":[{"host":${v}}]}}`],
      ['POST', '/v1/agents', (v) => `{"egress":{"allow":[{"host":"a.test","ports":[${v}]}]}}`],
      ['POST', '/v1/agents', (v) => `{"policy":${v}}`],
      ['POST', '/v1/agents', (v) => `{"restrict":{"allow":[${v}]}}`],
      ['POST', `/v1/agents/${agent}/exec`, (v) => `{"command":"true","timeoutMs":${v}}`],
      ['POST', `/v1/agents/${agent}/exec`, (v) => `{"command":${v}}`],
      ['POST', `/v1/agents/${agent}/exec`, (v) => `{"command":"true","cwd":${v}}`],
      ['POST', `/v1/agents/${agent}/exec`, (v) => `{"command":"true","env":{"A":${v}}}`],
      [
        'POST',
        `/v1/agents/${agent}/exec`,
        (v) => `{"command":"true","env":{${v === '{}' ? '"":1' : `${JSON.stringify(v)}:"x"`}}}`,
      ],
      ['POST', `/v1/agents/${agent}/exec`, (v) => `{"command":"cat","stdin":${v}}`],
      ['POST', `/v1/agents/${agent}/terminals`, (v) => `{"cols":${v}}`],
      ['POST', `/v1/agents/${agent}/terminals`, (v) => `{"rows":${v}}`],
      ['POST', `/v1/agents/${agent}/terminals`, (v) => `{"name":${v},"command":["true"]}`],
      ['POST', `/v1/agents/${agent}/terminals`, (v) => `{"command":[${v}]}`],
      ['POST', `/v1/agents/${agent}/terminals`, (v) => `{"cwd":${v},"command":["true"]}`],
      ['POST', `/v1/agents/${agent}/messages`, (v) => `{"messages":[{"role":"user","content":${v}}]}`],
      ['POST', `/v1/agents/${agent}/pause`, (v) => `{"mode":${v}}`],
      ['POST', `/v1/agents/${agent}/rollback`, (v) => `{"seq":${v}}`],
      ['POST', `/v1/agents/${agent}/rollback`, (v) => `{"callId":${v}}`],
      ['PUT', `/v1/agents/${agent}/plan-mode`, (v) => `{"planMode":${v}}`],
      ['POST', `/v1/agents/${agent}/calls`, (v) => `{"calls":[{"id":${v},"name":"bash","arguments":{}}]}`],
      ['POST', `/v1/agents/${agent}/calls`, (v) => `{"calls":[{"id":"a","name":${v},"arguments":{}}]}`],
      ['POST', `/v1/agents/${agent}/calls`, (v) => `{"calls":[{"id":"a","name":"bash","arguments":${v}}]}`],
      [
        'POST',
        `/v1/agents/${agent}/calls`,
        (v) => `{"calls":[{"id":"a","name":"read","arguments":{"file_path":${v}}}]}`,
      ],
      ['POST', `/v1/agents/${agent}/calls`, (v) => `{"calls":[],"step":${v}}`],
      [
        'POST',
        `/v1/agents/${agent}/remote-tools`,
        (v) => `{"tools":[{"name":${v},"description":"d","parameters":{}}]}`,
      ],
      ['POST', `/v1/agents/${agent}/mcp-servers`, (v) => `{"name":${v},"command":["true"]}`],
      ['POST', `/v1/agents/${agent}/mcp-servers`, (v) => `{"name":"m","command":${v},"timeoutMs":1}`],
      ['POST', `/v1/agents/${agent}/mcp-servers`, (v) => `{"name":"m","transport":"http","url":${v}}`],
      ['POST', `/v1/agents/${agent}/snapshots`, (v) => v],
      ['POST', '/v1/keys', (v) => `{"expiresAt":${v}}`],
      ['POST', '/v1/keys', (v) => `{"name":${v}}`],
      ['PUT', '/v1/settings', (v) => `{"pause":{"idleSeconds":${v}}}`],
      ['PUT', '/v1/settings', (v) => `{"pause":{"onCall":${v}}}`],
      ['PUT', '/v1/settings', (v) => `{"log":{"retentionDays":${v}}}`],
      ['PUT', '/v1/settings', (v) => `{"log":{"retentionBytes":${v}}}`],
      ['PUT', '/v1/settings', (v) => `{"log":{"deletedAgentHours":${v}}}`],
      ['PUT', '/v1/settings', (v) => `{"checkpoints":{"maxBytes":${v}}}`],
      ['PUT', '/v1/settings', (v) => `{"checkpoints":{"maxCount":${v}}}`],
      ['PUT', '/v1/egress', (v) => `{"allow":[{"host":${v}}]}`],
      ['PUT', '/v1/egress', (v) => `{"allow":[],"budget":{"connections":${v}}}`],
      ['PUT', '/v1/egress', (v) => `{"allow":[],"budget":{"bytesPerHour":${v}}}`],
      [
        'PUT',
        '/v1/egress',
        (v) => `{"allow":[],"credentials":[{"name":${v},"host":"a.test","header":"X","value":"v"}]}`,
      ],
      ['PUT', '/v1/egress', (v) => `{"allow":[],"search":{"provider":"searxng","url":${v}}}`],
      ['PUT', `/v1/tenants/${t.id}/limits`, (v) => `{"agents":${v}}`, ADMIN],
      ['PUT', `/v1/tenants/${t.id}/limits`, (v) => `{"diskMb":${v}}`, ADMIN],
      ['PUT', `/v1/tenants/${t.id}/limits`, (v) => `{"snapshotBytes":${v}}`, ADMIN],
      ['PUT', `/v1/tenants/${t.id}/limits`, (v) => `{"logBytes":${v}}`, ADMIN],
      ['PUT', `/v1/tenants/${t.id}/limits`, (v) => `{"plugins":${v}}`, ADMIN],
      ['PUT', `/v1/tenants/${t.id}/limits`, (v) => `{"checkpointBytes":${v}}`, ADMIN],
      ['POST', '/v1/tenants', (v) => `{"name":${v}}`, ADMIN],
      ['POST', `/v1/tenants/${t.id}/keys`, (v) => `{"expiresAt":${v}}`, ADMIN],
    ];
    const failures: string[] = [];
    const look = (what: string, res: { status: number; json: Loose; text: string }) => {
      // A stdio server that exits (a valid odd name starts `true`) is the documented 502.
      if (res.json?.error?.code === 'MCP_SERVER_FAILED') return;
      if (res.status >= 500 || (res.status >= 400 && typeof res.json?.error?.code !== 'string'))
        failures.push(`${what} -> ${res.status} ${res.text.slice(0, 200)}`);
    };
    for (const [method, path, body, key] of bodies) {
      for (const v of ODD) {
        const res = await h.http(key ?? t.key, method, path, body(v), { 'Content-Type': 'application/json' });
        look(`${method} ${path} ${body(v).slice(0, 80)}`, res);
        // Whatever a valid odd value made, undo: the quotas of the next ones stay the tenant's.
        if (path.endsWith('/limits')) await h.http(ADMIN, 'PUT', path, {});
      }
    }
    const queries: string[] = [
      `/v1/agents/${agent}/events?after=`,
      `/v1/agents/${agent}/events/export?after=`,
      `/v1/agents/${agent}/events/1/payload?pointer=`,
      `/v1/agents/${agent}/directory?path=`,
      `/v1/agents/${agent}/files?path=`,
      `/v1/agents/${agent}/archive?path=`,
      `/v1/agents/${agent}/mailbox?after=`,
      `/v1/agents/${agent}/children?scope=`,
      `/v1/agents/${agent}/requests?state=`,
      `/v1/agents/${agent}/terminals/x?offset=`,
      `/v1/events/export?after=1&agent=`,
      `/v1/events/export?agent=${agent}&after=`,
      '/v1/admin/workspaces?limit=',
      '/v1/admin/workspaces?after=',
    ];
    const QUERY_ODD = [
      '-1',
      '1e400',
      'NaN',
      '1.5',
      '%00',
      '%ED%A0%80',
      'x'.repeat(10_000),
      '..%2F..',
      '99999999999999999999',
    ];
    for (const q of queries)
      for (const v of QUERY_ODD)
        look(
          `GET ${q}${v.slice(0, 40)}`,
          await h.http(q.startsWith('/v1/admin') ? ADMIN : t.key, 'GET', `${q}${v}`),
        );
    for (const v of QUERY_ODD)
      look(
        `DELETE files ${v.slice(0, 40)}`,
        await h.http(t.key, 'DELETE', `/v1/agents/${agent}/files?path=${v}&recursive=true`),
      );
    // Odd ids in every path position (percent-encoded bytes, traversal, huge, non-ASCII).
    const IDS = [
      '%00',
      '%2F',
      '..%2F..%2Fetc',
      'x'.repeat(10_000),
      '%F0%9F%92%A9',
      '%ED%A0%80',
      '%25',
      'a%0Ab',
      '.',
      '..',
    ];
    const paths: [string, string, string?][] = [
      ['GET', '/v1/agents/ID'],
      ['DELETE', '/v1/agents/ID'],
      ['PUT', '/v1/skills/ID'],
      ['GET', '/v1/skills/ID'],
      ['DELETE', '/v1/skills/ID'],
      ['GET', '/v1/snapshots/ID'],
      ['DELETE', '/v1/snapshots/ID'],
      ['DELETE', '/v1/keys/ID'],
      ['GET', `/v1/agents/${agent}/terminals/ID`],
      ['DELETE', `/v1/agents/${agent}/terminals/ID`],
      ['GET', `/v1/agents/${agent}/requests/ID`],
      ['POST', `/v1/agents/${agent}/requests/ID`],
      ['DELETE', `/v1/agents/${agent}/schedules/ID`],
      ['GET', `/v1/agents/${agent}/mcp-servers/ID`],
      ['DELETE', `/v1/agents/${agent}/mcp-servers/ID`],
      ['GET', `/v1/agents/${agent}/plugins/ID`],
      ['GET', `/v1/agents/${agent}/events/ID/payload?pointer=/x`],
      ['GET', '/v1/tenants/ID', ADMIN],
      ['DELETE', '/v1/tenants/ID', ADMIN],
      ['GET', '/v1/tenants/ID/agents', ADMIN],
      ['PUT', '/v1/tenants/ID/limits', ADMIN],
      ['POST', '/v1/nodes/ID/cordon', ADMIN],
    ];
    for (const [method, template, key] of paths)
      for (const id of IDS) {
        const path = template.replace('ID', id);
        const body = method === 'PUT' || method === 'POST' ? {} : undefined;
        look(`${method} ${path.slice(0, 120)}`, await h.http(key ?? t.key, method, path, body));
      }
    expect(failures).toEqual([]);
    expect((await h.http(h.keyB, 'GET', '/v1/agents')).status).toBe(200);
  });
});
