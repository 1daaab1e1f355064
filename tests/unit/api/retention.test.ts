// Log retention through the API (issue 34): a tenant sets how long its log is kept
// (PUT /v1/settings `log`), the background pass (host/tenants/retention.ts) removes what is past
// it, and a client sees where the kept log starts: pages carry firstSeq, a resume point older than
// it answers 410 LOG_TRUNCATED instead of skipping silently, and the NDJSON export streams the
// kept log with large values in place, resumable with after=. Hostile settings are refused.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogRetention } from '../../../host/tenants/retention.ts';
import { type Api, makeApi } from './harness.ts';

const DAY = 86_400_000;
let clock = Date.UTC(2026, 0, 1);
let api: Api;
beforeEach(async () => {
  clock = Date.UTC(2026, 0, 1);
  api = await makeApi({}, { store: { now: () => clock } });
});
afterEach(async () => {
  await api.close();
});

const retention = (maxDays = 0) =>
  createLogRetention({
    store: api.store.logRetention,
    settings: api.agents.settings,
    events: api.store.events,
    maxDays,
    sliceRows: 3,
    now: () => clock,
  });

const say = (sessionId: string, texts: string[]) =>
  api.store.events.append(
    texts.map((text) => ({ sessionId, type: 'message.user', surface: 'current' as const, data: { text } })),
  );

const ndjson = (text: string) =>
  text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line));

describe('log retention', () => {
  it('keeps the log as long as the tenant says, and pages say where the kept log starts', async () => {
    const { id } = await api.createAgent(api.keyA);
    await say(id, ['old 1', 'old 2', 'old 3', 'old 4', 'old 5']);
    clock += 3 * DAY;
    await say(id, ['new 1', 'new 2']);
    const put = await api.request(api.keyA, 'PUT', '/v1/settings', { log: { retentionDays: 2 } });
    expect(put.status).toBe(200);
    expect(put.json.log).toEqual({ retentionDays: 2, retentionBytes: 0, deletedAgentHours: 168 });
    expect((await api.request(api.keyA, 'GET', '/v1/settings')).json.log.retentionDays).toBe(2);

    const page = await api.request(api.keyA, 'GET', `/v1/agents/${id}/events`);
    const first = page.json.firstSeq as number;
    expect(first).toBe(1);
    const last = page.json.next as number;

    const pass = await retention().run();
    expect(pass).toMatchObject({ tenants: 1, events: 5 });
    expect(pass.slices).toBe(2);

    const kept = await api.request(api.keyA, 'GET', `/v1/agents/${id}/events`);
    expect(kept.json.firstSeq).toBe(6);
    expect(kept.json.events.map((e: { seq: number }) => e.seq)).toEqual(
      Array.from({ length: last - 5 }, (_, i) => 6 + i),
    );
    expect(kept.json.events[0].data).toEqual({ text: 'new 1' });
    // A resume point inside the removed part is refused, naming where to go on from.
    const stale = await api.request(api.keyA, 'GET', `/v1/agents/${id}/events?after=2`);
    expect(stale.status).toBe(410);
    expect(stale.json.error).toMatchObject({ code: 'LOG_TRUNCATED', data: { after: 2, firstSeq: 6 } });
    const sse = await api.request(api.keyA, 'GET', `/v1/agents/${id}/events`, undefined, {
      Accept: 'text/event-stream',
      'Last-Event-ID': '1',
    });
    expect(sse.status).toBe(410);
    const edge = await api.request(api.keyA, 'GET', `/v1/agents/${id}/events?after=5`);
    expect(edge.status).toBe(200);
    expect(edge.json.events[0].seq).toBe(6);
    // Appends go on after the last seq.
    const [next] = await say(id, ['after']);
    expect(next!.seq).toBe(last + 1);
  });

  it("the operator's maximum applies over a tenant that set no limit", async () => {
    const { id } = await api.createAgent(api.keyA);
    const other = await api.createAgent(api.keyB);
    await say(id, ['a', 'b']);
    await say(other.id, ['c']);
    clock += 10 * DAY;
    await say(id, ['d']);
    const pass = await retention(5).run();
    expect(pass.events).toBe(3);
    expect((await api.request(api.keyA, 'GET', `/v1/agents/${id}/events`)).json.firstSeq).toBe(3);
    expect((await api.request(api.keyB, 'GET', `/v1/agents/${other.id}/events`)).json.events).toEqual([]);
  });

  it('exports the kept log as NDJSON with large values in place, resumable with after=', async () => {
    const { id } = await api.createAgent(api.keyA);
    const big = 'z'.repeat(50_000);
    await say(id, ['one', big, 'three']);
    const all = await api.request(api.keyA, 'GET', `/v1/agents/${id}/events/export`);
    expect(all.status).toBe(200);
    expect(all.headers.get('content-type')).toBe('application/x-ndjson');
    expect(all.headers.get('x-first-seq')).toBe('1');
    const lines = ndjson(all.text);
    expect(lines.map((e) => e.seq)).toEqual(Array.from({ length: lines.length }, (_, i) => i + 1));
    expect(lines.find((e) => e.data?.text === big)).toBeDefined();
    expect(lines.some((e) => e.payloads !== undefined)).toBe(false);

    const rest = ndjson((await api.request(api.keyA, 'GET', `/v1/agents/${id}/events/export?after=2`)).text);
    expect(rest.map((e) => e.seq)).toEqual(lines.slice(2).map((e) => e.seq));
    expect(
      ndjson((await api.request(api.keyA, 'GET', `/v1/agents/${id}/events/export?after=999`)).text),
    ).toEqual([]);

    clock += 2 * DAY;
    await say(id, ['later']);
    await api.request(api.keyA, 'PUT', '/v1/settings', { log: { retentionDays: 1 } });
    await retention().run();
    const kept = await api.request(api.keyA, 'GET', `/v1/agents/${id}/events/export`);
    expect(kept.headers.get('x-first-seq')).toBe(String(lines.length + 1));
    expect(ndjson(kept.text).map((e) => e.data)).toEqual([{ text: 'later' }]);
    const stale = await api.request(api.keyA, 'GET', `/v1/agents/${id}/events/export?after=1`);
    expect(stale.status).toBe(410);
    expect(stale.json.error.code).toBe('LOG_TRUNCATED');
  });

  it('an export that retention overtakes ends with an error instead of skipping', async () => {
    const { id } = await api.createAgent(api.keyA);
    await say(
      id,
      Array.from({ length: 1200 }, (_, i) => `old ${i}`),
    );
    clock += 3 * DAY;
    await say(id, ['new']);
    await api.request(api.keyA, 'PUT', '/v1/settings', { log: { retentionDays: 1 } });
    const res = await api.app.request(`/v1/agents/${id}/events/export`, {
      headers: { Authorization: `Bearer ${api.keyA}` },
    });
    const reader = res.body!.getReader();
    const first = await reader.read();
    const lines = ndjson(new TextDecoder().decode(first.value));
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.length).toBeLessThan(1200);
    await retention().run();
    await expect(
      (async () => {
        for (;;) if ((await reader.read()).done) return 'done';
      })(),
    ).rejects.toMatchObject({ code: 'LOG_TRUNCATED' });
  });

  it('a live stream that retention overtakes ends with `truncated` instead of skipping', async () => {
    const { id } = await api.createAgent(api.keyA);
    await say(
      id,
      Array.from({ length: 2500 }, (_, i) => `old ${i}`),
    );
    clock += 3 * DAY;
    await say(id, ['new']);
    await api.request(api.keyA, 'PUT', '/v1/settings', { log: { retentionDays: 1 } });
    const res = await api.app.request(`/v1/agents/${id}/events`, {
      headers: { Authorization: `Bearer ${api.keyA}`, Accept: 'text/event-stream' },
    });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value);
    await retention().run();
    while (!text.includes('event: truncated')) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    await reader.cancel();
    const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1));
    expect(ids.length).toBeLessThan(2500);
    const end = text.slice(text.indexOf('event: truncated'));
    const data = JSON.parse(/^data: (.*)$/m.exec(end)![1]!);
    expect(data).toMatchObject({ lastEventId: ids.at(-1), firstSeq: 2501 });
  });

  it("exports the whole tenant's log, agent by agent, resumable at any line, and never another tenant's", async () => {
    const first = await api.createAgent(api.keyA);
    clock += 1000; // agents are listed oldest first
    const second = await api.createAgent(api.keyA);
    const theirs = await api.createAgent(api.keyB);
    const big = 'y'.repeat(50_000);
    await say(first.id, ['a1', big]);
    await say(second.id, ['b1', 'b2']);
    await say(theirs.id, ['secret']);
    const all = ndjson((await api.request(api.keyA, 'GET', '/v1/events/export')).text);
    const ours = (agentId: string) => all.filter((e) => e.agentId === agentId);
    expect(new Set(all.map((e) => e.agentId))).toEqual(new Set([first.id, second.id]));
    expect(all.findIndex((e) => e.agentId === second.id)).toBe(ours(first.id).length);
    expect(ours(first.id).some((e) => e.data?.text === big)).toBe(true);
    expect(JSON.stringify(all)).not.toContain('secret');
    // Resumed after any whole line: the rest, exactly.
    for (const [i, line] of all.entries()) {
      const rest = await api.request(
        api.keyA,
        'GET',
        `/v1/events/export?agent=${line.agentId}&after=${line.seq}`,
      );
      expect(ndjson(rest.text)).toEqual(all.slice(i + 1));
    }
    expect((await api.request(api.keyA, 'GET', `/v1/events/export?agent=${theirs.id}`)).status).toBe(404);
    expect((await api.request(api.keyA, 'GET', '/v1/events/export?after=3')).status).toBe(400);
    expect((await api.request(api.keyA, 'GET', '/v1/events/export?agent=../x')).status).toBe(400);
    expect((await api.request(undefined, 'GET', '/v1/events/export')).status).toBe(401);
  });

  it("another tenant's agent, and hostile queries and settings, are refused", async () => {
    const { id } = await api.createAgent(api.keyA);
    expect((await api.request(api.keyB, 'GET', `/v1/agents/${id}/events/export`)).status).toBe(404);
    for (const after of ['-1', 'x', '1e3', '9'.repeat(20)])
      expect(
        (await api.request(api.keyA, 'GET', `/v1/agents/${id}/events/export?after=${after}`)).status,
      ).toBe(400);
    for (const log of [
      { retentionDays: -1 },
      { retentionDays: 1.5 },
      { retentionDays: '7' },
      { retentionBytes: 2 ** 60 },
      { deletedAgentHours: null },
      { keepForever: true },
    ])
      expect((await api.request(api.keyA, 'PUT', '/v1/settings', { log })).status).toBe(400);
    expect((await api.request(api.keyA, 'GET', '/v1/settings')).json.log).toEqual({
      retentionDays: 0,
      retentionBytes: 0,
      deletedAgentHours: 168,
    });
  });

  it("a deleted agent's log goes after the tenant's grace", async () => {
    const { id } = await api.createAgent(api.keyA);
    await say(id, ['one', 'two']);
    await api.request(api.keyA, 'PUT', '/v1/settings', { log: { deletedAgentHours: 1 } });
    expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${id}`)).status).toBeLessThan(300);
    expect((await retention().run()).events).toBe(0);
    clock += 2 * 3_600_000;
    expect((await retention().run()).events).toBeGreaterThanOrEqual(2);
    expect(await api.store.events.list(id)).toEqual([]);
  });
});
