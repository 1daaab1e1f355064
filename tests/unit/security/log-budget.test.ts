// Storage amplification and unbounded event pages (issue 11): one small program stored ~954 MiB
// of repeated arguments, one GET /events page was 382 MiB and stalled another tenant. Through the
// API: a tenant at its log budget gets STORE_BUDGET_EXCEEDED and the store stops growing while the
// other tenant carries on; event pages and streams stay under their byte bound, and every event
// and large value can still be read, by its own tenant only.
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../../helpers/until.ts';
import { ADMIN_KEY, type Api, type Loose, makeApi } from '../api/harness.ts';
import { readSse } from '../api/sse.ts';

const KiB = 1024;
const MiB = 1024 * KiB;
const PAGE_BYTES = 64 * KiB;
const unique = (i: number, size: number) => `${i}:`.padEnd(size, String.fromCharCode(97 + (i % 26)));
const write = (i: number, size = 200 * KiB) => ({
  id: `w${i}`,
  name: 'write',
  arguments: { file_path: `f${i}.txt`, content: unique(i, size) },
});

describe('durable log budgets and bounded event pages', () => {
  let api: Api;
  afterEach(() => api?.close());

  const logBytes = async (agentId: string): Promise<number> => {
    const tenantId = (await api.store.agents.listAll()).find((a) => a.id === agentId)!.tenantId;
    const metrics = await api.request(ADMIN_KEY, 'GET', '/metrics');
    const line = metrics.text
      .split('\n')
      .find((l) => l.startsWith(`dsh_store_log_bytes{tenant="${tenantId}"}`));
    return Number(line?.split(' ').at(-1));
  };
  /** Every event of an agent, page by page, checking each page's size. */
  const allEvents = async (key: string, agentId: string): Promise<Loose[]> => {
    const events: Loose[] = [];
    for (let after = 0; ; ) {
      const page = await api.request(key, 'GET', `/v1/agents/${agentId}/events?after=${after}&limit=5000`);
      expect(page.status).toBe(200);
      expect(Buffer.byteLength(page.text)).toBeLessThanOrEqual(PAGE_BYTES + 64);
      if (page.json.events.length === 0) return events;
      events.push(...page.json.events);
      after = page.json.next;
    }
  };

  it('a tenant at its budget cannot grow the store, another tenant is unaffected, and every call that ran is logged', async () => {
    api = await makeApi(
      { maxJsonBytes: 4 * MiB, eventPageBytes: PAGE_BYTES },
      { store: { logBudgetBytes: MiB } },
    );
    const a = await api.createAgent(api.keyA);
    const b = await api.createAgent(api.keyB);

    // Unique 200 KiB writes until the tenant's log is full.
    const results: Loose[] = [];
    for (
      let round = 0;
      round < 20 && !results.some((r) => r.error?.code === 'STORE_BUDGET_EXCEEDED');
      round++
    ) {
      const res = await api.call(
        api.keyA,
        a.id,
        Array.from({ length: 10 }, (_, i) => write(round * 10 + i)),
      );
      expect(res.status).toBe(200);
      results.push(...res.json.results);
    }
    const refused = results.filter((r) => r.error?.code === 'STORE_BUDGET_EXCEEDED');
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0].content).toEqual([
      {
        type: 'text',
        text: `Error: The call to write was not run: this tenant's event log is over its storage budget.`,
      },
    ]);
    const admitted = results.filter((r) => r.ok);
    expect(admitted.length + refused.length).toBe(results.length);

    expect(await logBytes(a.id)).toBeLessThanOrEqual(MiB);
    // What is left takes small calls until they do not fit either; then nothing grows.
    for (let i = 0; i < 200; i++) {
      const small = await api.call(api.keyA, a.id, [write(500 + i, 100)]);
      if (small.json.results[0].error?.code === 'STORE_BUDGET_EXCEEDED') break;
      expect(small.json.results[0].ok).toBe(true);
      admitted.push(small.json.results[0]);
    }
    const spent = await logBytes(a.id);
    expect(spent).toBeGreaterThan(MiB - 2 * KiB);
    expect(spent).toBeLessThanOrEqual(MiB);
    const more = await api.call(api.keyA, a.id, [write(900), write(901, 100)]);
    expect(more.json.results.map((r: Loose) => r.error?.code)).toEqual([
      'STORE_BUDGET_EXCEEDED',
      'STORE_BUDGET_EXCEEDED',
    ]);
    const file = await api.request(api.keyA, 'GET', `/v1/agents/${a.id}/files?path=f900.txt`);
    expect(file.status).toBe(404);
    expect(await logBytes(a.id)).toBe(spent);

    // Tenant B writes and reads its large values as usual.
    const other = await api.call(api.keyB, b.id, [write(1)]);
    expect(other.json.results[0].ok).toBe(true);
    const [call] = (await allEvents(api.keyB, b.id)).filter((e) => e.type === 'tool.call');
    expect(call.payloads).toEqual([
      expect.objectContaining({ pointer: '/arguments/content', bytes: 200 * KiB + 2 }),
    ]);
    const value = await api.request(
      api.keyB,
      'GET',
      `/v1/agents/${b.id}/events/${call.seq}/payload?pointer=/arguments/content`,
    );
    expect(value.json).toBe(unique(1, 200 * KiB));

    // Every call of A that ran is in its log whole, with its result; nothing else is; another
    // tenant cannot reach its values.
    const events = await allEvents(api.keyA, a.id);
    const calls = events.filter((e) => e.type === 'tool.call');
    expect(calls.map((e) => e.callId)).toEqual(admitted.map((r) => r.id));
    expect(events.filter((e) => e.type === 'tool.result').map((e) => e.callId)).toEqual(
      admitted.map((r) => r.id),
    );
    for (const event of calls.filter((e) => e.payloads !== undefined)) {
      const i = Number(event.callId.slice(1));
      const path = `/v1/agents/${a.id}/events/${event.seq}/payload?pointer=/arguments/content`;
      expect((await api.request(api.keyA, 'GET', path)).json).toBe(unique(i, 200 * KiB));
      expect((await api.request(api.keyB, 'GET', path)).status).toBe(404);
    }
    const metrics = await api.request(ADMIN_KEY, 'GET', '/metrics');
    expect(metrics.text).toMatch(/dsh_store_appends_refused_total\{tenant="[^"]+"\} [1-9]/);
    expect(metrics.text).toContain(`dsh_store_log_budget_bytes ${MiB}`);
  });

  it('pages and the event stream stay under the byte bound over many large events', async () => {
    api = await makeApi({ maxJsonBytes: 4 * MiB, eventPageBytes: PAGE_BYTES });
    const a = await api.createAgent(api.keyA);
    for (let round = 0; round < 4; round++) {
      const res = await api.call(
        api.keyA,
        a.id,
        Array.from({ length: 10 }, (_, i) => write(round * 10 + i, 100 * KiB)),
      );
      expect(res.json.results.every((r: Loose) => r.ok)).toBe(true);
    }
    const events = await allEvents(api.keyA, a.id);
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 80 }, (_, i) => i + 1));

    const res = await api.app.request(`/v1/agents/${a.id}/events`, {
      headers: { Authorization: `Bearer ${api.keyA}`, Accept: 'text/event-stream' },
    });
    let replayed = 0;
    const streamed = readSse(res.body as ReadableStream<Uint8Array>, (m) => {
      replayed = m.length;
      return m.length >= 82;
    });
    await until(() => replayed === 80, { what: 'the replay' }); // the next events come live
    await api.call(api.keyA, a.id, [write(99, 300 * KiB)]);
    const messages = await streamed;
    expect(messages.map((m) => Number(m.id))).toEqual(Array.from({ length: 82 }, (_, i) => i + 1));
    for (const m of messages) expect(JSON.stringify(m.data).length).toBeLessThan(2 * KiB);
    expect(messages[80]!.data).toMatchObject({
      type: 'tool.call',
      callId: 'w99',
      payloads: [{ pointer: '/arguments/content', bytes: 300 * KiB + 2 }],
    });
  });
});
