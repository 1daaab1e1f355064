// Storage amplification through code mode (issue 11): a ~255-byte run_code program that calls a
// tool 1000 times with the same 977 KiB argument stored ~954 MiB, and one GET /events page over it
// was 382 MiB. Through the real server, isolate host and containers: the store grows by about one
// copy, event pages stay under their byte bound with the value by reference, and a tenant whose
// log budget is spent gets STORE_BUDGET_EXCEEDED for its programs' calls while the other tenant's
// program runs as usual.
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LibsqlStore } from '../../../host/store/index.ts';
import { type Harness, type Loose, METRICS_KEY, startHarness, text } from './harness.ts';

const MiB = 1024 * 1024;
const BUDGET = 16 * MiB;
/** The report's program made 1000 calls; 100 fit well within the 30 s wall clock of a run on a loaded machine. */
const CALLS = 100;
let h: Harness;

/**
 * The program of the report: `calls` inner calls, each with a 977 KiB argument (a `salt` makes them
 * distinct). The calls are invalid (pattern is not a string), so nothing but the log is exercised:
 * every call is recorded, with its arguments, before it is validated.
 */
const program = (salt: string | undefined, calls = CALLS) => `
  const big = 'x'.repeat(1000000);
  const codes = {};
  for (let i = 0; i < ${calls}; i++) {
    try { await tools.glob({ pattern: 0, path: ${salt === undefined ? 'big' : `'${salt}' + i + big`} }); codes.ok = (codes.ok ?? 0) + 1; }
    catch (e) { const k = String(e.message).slice(0, 100); codes[k] = (codes[k] ?? 0) + 1; }
  }
  return codes;`;

const storeBytes = () => {
  const path = join(h.dataDir, 'store.db');
  (h.server.store as LibsqlStore).db.pragma('wal_checkpoint(TRUNCATE)');
  return statSync(path).size;
};

beforeAll(async () => {
  h = await startHarness({ config: { tenantLogBytes: BUDGET } });
});
afterAll(async () => {
  await h?.close();
});

describe('durable log amplification (issue 11)', () => {
  it('a program repeating one 977 KiB argument in every call stores it about once', async () => {
    const agent = await h.agent(h.keyA, { preset: 'code' });
    const before = storeBytes();
    const [r] = await h.calls(h.keyA, agent, [
      ['p', 'run_code', { code: program(undefined), description: 'probe' }],
    ]);
    expect(r.ok, text(r)).toBe(true);
    const grown = storeBytes() - before;
    expect(grown).toBeLessThan(4 * MiB);

    // Every page is bounded; the inner calls carry the argument by reference. (What a page costs to
    // serve, against the unbounded pages of issue 11: bench/event-pages.ts.)
    let after = 0;
    let calls = 0;
    let first: Loose;
    for (;;) {
      const page = await h.http(h.keyA, 'GET', `/v1/agents/${agent}/events?after=${after}&limit=5000`);
      expect(page.buf.length).toBeLessThanOrEqual(MiB + 1024);
      if (page.json.events.length === 0) break;
      const inner = page.json.events.filter((e: Loose) => e.type === 'tool.call' && e.parentCallId === 'p');
      first ??= inner[0];
      calls += inner.length;
      after = page.json.next;
    }
    expect(calls).toBe(CALLS);
    expect(first.payloads).toEqual([expect.objectContaining({ pointer: '/arguments/path', bytes: 1000002 })]);
    const value = await h.http(
      h.keyA,
      'GET',
      `/v1/agents/${agent}/events/${first.seq}/payload?pointer=/arguments/path`,
    );
    expect(value.json).toBe('x'.repeat(1000000));
    const other = await h.http(
      h.keyB,
      'GET',
      `/v1/agents/${agent}/events/${first.seq}/payload?pointer=/arguments/path`,
    );
    expect(other.status).toBe(404);
  }, 300_000);

  it('distinct large arguments spend the budget, then the tenant is refused and the other is not', async () => {
    const agent = await h.agent(h.keyA, { preset: 'code' });
    const [r] = await h.calls(h.keyA, agent, [
      ['q', 'run_code', { code: program('a'), description: 'probe' }],
    ]);
    expect(r.ok, text(r)).toBe(true);
    const refused = /over its storage budget\.?"?:\s*(\d+)/.exec(text(r));
    expect(Number(refused?.[1]), text(r)).toBeGreaterThan(CALLS - 20);
    const spent = async () => Math.max(...(await h.server.store.events.usage()).map((u) => u.bytes));
    const full = await spent();
    expect(full).toBeLessThanOrEqual(BUDGET);
    expect(full).toBeGreaterThan(BUDGET - 2 * MiB);
    // Another such program: every large call refused, the store grows by the program's own small
    // call and result at most.
    const before = storeBytes();
    const [again] = await h.calls(h.keyA, agent, [
      ['again', 'run_code', { code: program('again', 50), description: 'probe' }],
    ]);
    expect(/over its storage budget\.?"?:\s*(\d+)/.exec(text(again))?.[1], text(again)).toBe('50');
    expect((await spent()) - full).toBeLessThan(4 * 1024);
    expect(storeBytes()).toBeLessThanOrEqual(before + 64 * 1024);

    const agentB = await h.agent(h.keyB, { preset: 'code' });
    const [b] = await h.calls(h.keyB, agentB, [
      ['b', 'run_code', { code: program('b', 10), description: 'probe' }],
    ]);
    expect(b.ok, text(b)).toBe(true);
    expect(text(b)).not.toContain('budget');
    expect(text(b)).toContain(': 10');
    const metrics = await h.http(METRICS_KEY, 'GET', '/metrics');
    expect(metrics.text).toMatch(/dsh_store_log_bytes\{tenant="[^"]+"\} \d+/);
  }, 300_000);
});
