// Adversarial pass over tenancy, quotas and lifecycle, from outside through the public HTTP API:
// limits raced by concurrent requests, a tenant deleted while its requests are in flight, keys
// revoked under a client, and another tenant's ids in every position. A limit two concurrent
// requests can both pass, or a row that outlives its tenant, is a defect.
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../helpers/until.ts';
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

describe('keys', () => {
  it('a revoked key is refused at once, also on a stream it had opened', async () => {
    const t = await tenant('revoke');
    const second = await h.http(t.key, 'POST', '/v1/keys', { name: 'second' });
    expect(second.status).toBe(201);
    const del = await h.http(t.key, 'DELETE', `/v1/keys/${second.json.id}`);
    expect(del.status).toBe(204);
    const res = await h.http(second.json.apiKey, 'GET', '/v1/agents');
    expect(res.status).toBe(401);
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
