// A second tenant, holding the first tenant's ids (as if leaked in a log or guessed), tries every
// route. Guarantee: it can neither see nor change anything of the first tenant's, and the answer
// for "exists but not yours" is byte-for-byte the answer for "does not exist".
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse } from '../../unit/api/sse.ts';
import { type Harness, type Loose, startHarness, tarOf, text } from './harness.ts';

let h: Harness;
let agentA: string;
let agentB: string;
let jobA: string;
let pendingApproval: Loose;
let pendingRemote: Loose;
let approvalCall: Promise<Loose[]>;
let remoteCall: Promise<Loose[]>;

const pendingOf = async (key: string, agentId: string, kind: string): Promise<Loose> => {
  for (let i = 0; i < 500; i++) {
    const res = await h.http(key, 'GET', `/v1/agents/${agentId}/requests?state=pending`);
    const found = (res.json.requests as Loose[]).find((r) => r.kind === kind);
    if (found) return found;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no pending ${kind}`);
};

/** The error body with the id itself blanked, so two answers can be compared for any leak. */
const shape = (res: { status: number; json: Loose }, id: string) => ({
  status: res.status,
  body: JSON.stringify(res.json).replaceAll(id, '<ID>'),
});

beforeAll(async () => {
  h = await startHarness();
  agentA = await h.agent(h.keyA, {
    preset: 'standard',
    policy: { ask: ['write'] },
    remoteTools: [
      {
        name: 'lookup',
        description: 'client-side lookup',
        parameters: { type: 'object', properties: { q: { type: 'string' } } },
      },
    ],
  });
  agentB = await h.agent(h.keyB, { preset: 'standard' });
  const [w, j] = await h.calls(h.keyA, agentA, [
    ['secret', 'bash', { command: 'echo tenant-a-secret > secret.txt', description: 'plant' }],
    ['job', 'bash', { command: 'sleep 300', description: 'job', run_in_background: true }],
  ]);
  expect(w.ok, text(w)).toBe(true);
  jobA = j.value.jobId;
  approvalCall = h.calls(h.keyA, agentA, [['ask', 'write', { file_path: 'asked.txt', content: 'x' }]]);
  pendingApproval = await pendingOf(h.keyA, agentA, 'approval');
  remoteCall = h.calls(h.keyA, agentA, [['rt', 'lookup', { q: 'x' }]]);
  pendingRemote = await pendingOf(h.keyA, agentA, 'remote_tool');
});

afterAll(async () => {
  await h?.close();
});

describe('tenant isolation over HTTP', () => {
  it("another tenant's agent answers exactly like an agent that does not exist, on every route", async () => {
    const ghost = `agt_${'x'.repeat(21)}`;
    const routes: [string, string, unknown?, Record<string, string>?][] = [
      ['GET', ''],
      ['DELETE', ''],
      ['GET', '/tools'],
      [
        'POST',
        '/calls',
        { calls: [{ id: 'x', name: 'bash', arguments: { command: 'id', description: 'x' } }] },
      ],
      ['GET', '/events'],
      ['GET', '/events?after=0'],
      ['GET', '/requests?state=pending'],
      ['POST', '/remote-tools', { tools: [] }],
      ['GET', '/files?path=secret.txt'],
      ['PUT', '/files?path=pwned.txt', 'pwned', { 'Content-Type': 'application/octet-stream' }],
      ['GET', '/archive?path=.'],
      ['GET', '/terminals/t1'],
    ];
    for (const [method, suffix, body, headers] of routes) {
      const theirs = await h.http(h.keyB, method, `/v1/agents/${agentA}${suffix}`, body, headers);
      const nobody = await h.http(h.keyB, method, `/v1/agents/${ghost}${suffix}`, body, headers);
      expect(theirs.status, `${method} ${suffix}`).toBe(404);
      expect(shape(theirs, agentA), `${method} ${suffix}`).toEqual(shape(nobody, ghost));
      expect(theirs.text).not.toContain('tenant-a');
    }
    const tar = await tarOf([{ header: { name: 'pwned.txt' }, body: 'x' }]);
    const up = await h.http(h.keyB, 'PUT', `/v1/agents/${agentA}/archive?path=.`, tar, {
      'Content-Type': 'application/x-tar',
    });
    expect(up.status).toBe(404);
    // Nothing of A changed: the agent, its files, its job.
    expect((await h.http(h.keyA, 'GET', `/v1/agents/${agentA}`)).status).toBe(200);
    const ls = await h.bash(h.keyA, agentA, 'ls; cat secret.txt');
    expect(text(ls)).not.toContain('pwned');
    expect(text(ls)).toContain('tenant-a-secret');
  });

  it("listing shows only the caller's own agents", async () => {
    const listB = await h.http(h.keyB, 'GET', '/v1/agents');
    expect(listB.json.agents.map((a: Loose) => a.id)).toEqual([agentB]);
    expect(listB.text).not.toContain(agentA);
  });

  it("another tenant cannot read the first one's events, live or replayed with Last-Event-ID", async () => {
    const res = await fetch(`${h.server.url}/v1/agents/${agentA}/events`, {
      headers: { Authorization: `Bearer ${h.keyB}`, Accept: 'text/event-stream', 'Last-Event-ID': '0' },
    });
    expect(res.status).toBe(404);
    expect(await res.text()).not.toContain('tenant-a-secret');
    // B's own stream, resumed from 0 with Last-Event-ID, holds only B's events.
    await h.bash(h.keyB, agentB, 'echo tenant-b-own');
    const own = await fetch(`${h.server.url}/v1/agents/${agentB}/events`, {
      headers: { Authorization: `Bearer ${h.keyB}`, Accept: 'text/event-stream', 'Last-Event-ID': '0' },
    });
    const seen = await readSse(own.body as ReadableStream<Uint8Array>, (m) =>
      m.some((e) => e.data?.type === 'tool.result'),
    );
    const all = JSON.stringify(seen);
    expect(all).toContain('tenant-b-own');
    expect(all).not.toContain('tenant-a-secret');
    expect(all).not.toContain(agentA);
  });

  it("another tenant cannot answer the first one's approval or remote-tool request, even through its own agent", async () => {
    for (const req of [pendingApproval, pendingRemote]) {
      const answer = req.kind === 'approval' ? { allow: true } : { result: 'forged' };
      const direct = await h.http(h.keyB, 'POST', `/v1/agents/${agentA}/requests/${req.id}`, answer);
      expect(direct.status).toBe(404);
      const viaOwn = await h.http(h.keyB, 'POST', `/v1/agents/${agentB}/requests/${req.id}`, answer);
      expect(viaOwn.status).toBe(404);
      const nobody = await h.http(
        h.keyB,
        'POST',
        `/v1/agents/${agentB}/requests/req_${'y'.repeat(21)}`,
        answer,
      );
      expect(shape(viaOwn, req.id)).toEqual(shape(nobody, `req_${'y'.repeat(21)}`));
      expect((await h.http(h.keyB, 'GET', `/v1/agents/${agentB}/requests/${req.id}`)).status).toBe(404);
      const still = await h.http(h.keyA, 'GET', `/v1/agents/${agentA}/requests/${req.id}`);
      expect(still.json.state).toBe('pending');
    }
    // The owner can still answer them; the forged answers had no effect.
    await h.http(h.keyA, 'POST', `/v1/agents/${agentA}/requests/${pendingApproval.id}`, { allow: false });
    await h.http(h.keyA, 'POST', `/v1/agents/${agentA}/requests/${pendingRemote.id}`, { result: 'real' });
    expect((await approvalCall)[0].error.code).toBe('DENIED');
    expect((await remoteCall)[0].value).toBe('real');
  });

  it("another tenant's agent cannot reach the first one's files or jobs by name", async () => {
    const [out, kill] = await h.calls(h.keyB, agentB, [
      ['o', 'job_output', { job_id: jobA }],
      ['k', 'job_kill', { job_id: jobA }],
    ]);
    expect(out.ok).toBe(false);
    expect(kill.ok).toBe(false);
    const probe = await h.bash(
      h.keyB,
      agentB,
      'cat /workspace/secret.txt 2>&1; ls / /workspace; ps -eo pid,args 2>/dev/null || ls /proc',
    );
    expect(text(probe)).not.toContain('tenant-a-secret');
    expect(text(probe)).not.toContain('sleep 300');
    const [jobs] = await h.calls(h.keyA, agentA, [['l', 'job_list', {}]]);
    expect(JSON.stringify(jobs.value)).toContain(jobA);
  });

  it('ids are long random strings, not counters', async () => {
    const ids = [agentA, agentB, await h.agent(h.keyA), await h.agent(h.keyA)];
    for (const id of ids) expect(id).toMatch(/^agt_[A-Za-z0-9_-]{16,}$/);
    for (const rid of [pendingApproval.id, pendingRemote.id])
      expect(rid).toMatch(/^[a-z]+_[A-Za-z0-9_-]{16,}$/);
    // No shared prefix beyond the type tag: consecutive ids differ early.
    const [x, y] = ids.slice(2) as [string, string];
    expect(x.slice(0, 8)).not.toBe(y.slice(0, 8));
  });

  it('requests without a valid key are 401 and reveal nothing', async () => {
    const bad = [undefined, 'dsk_', `${h.keyA.slice(0, 12)}${'A'.repeat(40)}`, 'Basic abc'];
    for (const key of bad) {
      const headers: Record<string, string> = key?.startsWith('Basic') ? { Authorization: key } : {};
      const res = await h.http(
        key?.startsWith('Basic') ? undefined : key,
        'GET',
        `/v1/agents/${agentA}`,
        undefined,
        headers,
      );
      expect(res.status, String(key)).toBe(401);
      expect(res.json.error.code).toBe('UNAUTHORIZED');
      expect(res.text).not.toContain(agentA);
    }
  });
});
