// The session log tools (seed 000): their contract as the seed types them, full-text search that
// finds what a tool wrote 10,000 events back, traces of nested calls, and the walls: another
// tenant's sessions are never reached, and a policy of `sessions: "own"` keeps an agent to its own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Loose } from '../api/harness.ts';
import { startService } from './helpers.ts';

const service = startService();
const { store, agents, call } = service;
const tenantA = (await store.tenants.createTenant('a')).id;
const tenantB = (await store.tenants.createTenant('b')).id;
const MARKER = 'zebra-quokka-4711';
let agentA: Awaited<ReturnType<typeof agents.create>>;
let markerSeq = 0;

beforeAll(async () => {
  agentA = await agents.create(tenantA, { preset: 'standard' });
  await (await agents.sandbox(agentA)).fs.writeFile('notes.txt', Buffer.from(`the answer is ${MARKER}\n`));
  const read = await call(agentA, 'read', { file_path: 'notes.txt' });
  expect(read.ok).toBe(true);
  await store.events.flush();
  markerSeq = (await store.events.list(agentA.id)).find((e) => e.type === 'tool.result')!.seq;
  // 10,000 events after it: 5,000 calls of a concurrency-safe tool, each a call and a result.
  const live = await agents.get(tenantA, agentA.id);
  for (let batch = 0; batch < 10; batch++) {
    const calls = Array.from({ length: 500 }, (_, i) => ({
      id: `f${batch}-${i}`,
      name: 'job_list',
      arguments: {},
    }));
    await agents.call(live, calls, { signal: new AbortController().signal });
  }
  await store.events.flush();
}, 120_000);

afterAll(() => service.stop());

describe('the contract (seed 000)', () => {
  it('the five tools take exactly the arguments the seed names, with its optionality and enums', async () => {
    const { tools } = await agents.tools(agentA);
    const schema = (name: string): Loose => tools.find((t) => t.name === name)!.parameters;
    const shape = (name: string) => {
      const s = schema(name);
      return { properties: Object.keys(s.properties).sort(), required: (s.required ?? []).sort() };
    };
    expect(shape('session_event_read')).toEqual({
      properties: ['after', 'before', 'seq', 'session_id'],
      required: ['seq'],
    });
    expect(shape('session_event_search')).toEqual({
      properties: [
        'event_types',
        'query',
        'seq_from',
        'seq_to',
        'session_id',
        'surfaces',
        'time_from',
        'time_to',
      ],
      required: ['query'],
    });
    expect(shape('session_event_trace')).toEqual({ properties: ['seq', 'session_id'], required: ['seq'] });
    expect(shape('session_trace')).toEqual({ properties: ['session_id'], required: [] });
    expect(shape('session_search')).toEqual({
      properties: [
        'availability',
        'created_at_from',
        'created_at_to',
        'event_seq_from',
        'event_seq_to',
        'event_surfaces',
        'event_time_from',
        'event_time_to',
        'event_types',
        'include_root_sessions',
        'parent_session_ids',
        'query',
        'session_ids',
      ],
      required: ['query'],
    });
    expect(schema('session_event_search').properties.surfaces.items.enum).toEqual([
      'current',
      'shadowed',
      'log-only',
    ]);
    expect(schema('session_search').properties.availability.items.enum).toEqual(['live', 'persisted']);
    expect(schema('session_event_read').properties.seq.type).toBe('integer');
  });
});

describe('search and read', () => {
  it('session_event_search finds a string a tool wrote 10,000 events back', async () => {
    expect((await store.events.list(agentA.id, { afterSeq: markerSeq, limit: 5000 })).length).toBe(5000);
    const result = await call(agentA, 'session_event_search', { query: MARKER });
    expect(result.ok).toBe(true);
    const hits = (result.value as Loose).hits;
    expect(hits).toEqual([
      expect.objectContaining({ session_id: agentA.id, seq: markerSeq, type: 'tool.result', name: 'read' }),
    ]);
    expect(hits[0].snippet).toContain(MARKER);
    // The searches themselves are found by their tool's name, not by what they searched for.
    const searches = await call(agentA, 'session_event_search', { query: 'session_event_search' });
    expect((searches.value as Loose).hits.length).toBeGreaterThan(0);
    const last = (await store.search.session(tenantA, agentA.id))!.lastSeq;
    expect(last - markerSeq).toBeGreaterThanOrEqual(10_000);
  });

  it('filters by seq, type and surface narrow the search; a word that is not there finds nothing', async () => {
    // Results only: the searches' own calls (which carry the query) are tool.call events.
    const hits = async (args: object) =>
      (
        (await call(agentA, 'session_event_search', { query: MARKER, event_types: ['tool.result'], ...args }))
          .value as Loose
      ).hits.length;
    expect(await hits({ seq_from: markerSeq + 1 })).toBe(0);
    expect(await hits({ seq_to: markerSeq })).toBe(1);
    expect(await hits({ event_types: ['tool.call'] })).toBe(0);
    expect(await hits({ surfaces: ['log-only'] })).toBe(0);
    expect(await hits({ surfaces: ['shadowed', 'current'] })).toBe(1);
    expect(await hits({ time_to: '2000-01-01T00:00:00Z' })).toBe(0);
    const none = await call(agentA, 'session_event_search', { query: 'nothing-like-this-was-written' });
    expect((none.value as Loose).hits).toEqual([]);
  });

  it('a query cannot reach FTS5 syntax', async () => {
    for (const query of ['"', 'a OR b', 'NEAR(x y)', '*', 'owner : t', ')(']) {
      const result = await call(agentA, 'session_event_search', { query });
      expect(result.ok, query).toBe(true);
    }
  });

  it('session_event_read shows the event with its neighbours, bounded', async () => {
    const result = await call(agentA, 'session_event_read', { seq: markerSeq, before: 1, after: 2 });
    const events = (result.value as Loose).events;
    expect(events.map((e: Loose) => e.seq)).toEqual([markerSeq - 1, markerSeq, markerSeq + 1, markerSeq + 2]);
    expect(JSON.stringify(events[1].data)).toContain(MARKER);
    const wide = await call(agentA, 'session_event_read', {
      seq: markerSeq + 100,
      before: 1000,
      after: 1000,
    });
    expect((wide.value as Loose).events.length).toBe(41);
    const missing = await call(agentA, 'session_event_read', { seq: 10_000_000 });
    expect(missing.error?.code).toBe('NOT_FOUND');
  });

  it("session_search finds the session among the tenant's sessions, and session_trace describes it", async () => {
    const other = await agents.create(tenantA, { preset: 'standard' });
    const found = await call(other, 'session_search', { query: MARKER });
    expect((found.value as Loose).sessions).toEqual([
      expect.objectContaining({
        session_id: agentA.id,
        availability: 'live',
        parent_session_id: null,
        matches: 1,
      }),
    ]);
    expect(
      (await call(other, 'session_search', { query: MARKER, availability: ['persisted'] })).value,
    ).toEqual({
      sessions: [],
    });
    expect(
      (await call(other, 'session_search', { query: MARKER, include_root_sessions: false })).value,
    ).toEqual({
      sessions: [],
    });
    // agentA has no children: none are found under it; roots only when asked for.
    const children = await call(other, 'session_search', { query: MARKER, parent_session_ids: [agentA.id] });
    expect(children.value).toEqual({ sessions: [] });
    const withRoots = await call(other, 'session_search', {
      query: MARKER,
      parent_session_ids: [agentA.id],
      include_root_sessions: true,
    });
    expect((withRoots.value as Loose).sessions.map((x: Loose) => x.session_id)).toEqual([agentA.id]);
    const traced = await call(other, 'session_trace', { session_id: agentA.id });
    expect(traced.value).toMatchObject({ session_id: agentA.id, parent_session_id: null, children: [] });
    expect((traced.value as Loose).recent_calls.length).toBeGreaterThan(0);
  });

  it("a child agent's session has its parent's as parent: search by parent, trace the tree", async () => {
    const parent = await agents.create(tenantA, { preset: 'standard', subagents: true });
    const spawned = await call(parent, 'subagent', {
      description: 'd',
      prompt: 'p',
      run_in_background: true,
    });
    const childId = (spawned.value as Loose).agent_id as string;
    const child = await agents.get(tenantA, childId);
    await agents.appendMessages(child, [{ role: 'assistant', content: `child says ${MARKER}-kid` }]);
    const byParent = await call(parent, 'session_search', {
      query: `${MARKER}-kid`,
      parent_session_ids: [parent.id],
    });
    expect((byParent.value as Loose).sessions).toEqual([
      expect.objectContaining({ session_id: childId, parent_session_id: parent.id, matches: 1 }),
    ]);
    const otherParent = await call(parent, 'session_search', {
      query: `${MARKER}-kid`,
      parent_session_ids: [agentA.id],
    });
    expect(otherParent.value).toEqual({ sessions: [] });
    const noRoots = await call(parent, 'session_search', { query: MARKER, include_root_sessions: false });
    expect((noRoots.value as Loose).sessions.map((x: Loose) => x.session_id)).toEqual([childId]);
    expect((await call(parent, 'session_trace', {})).value).toMatchObject({ children: [childId] });
    expect((await call(child, 'session_trace', {})).value).toMatchObject({
      session_id: childId,
      parent_session_id: parent.id,
      children: [],
    });
  });
});

describe('traces', () => {
  it('session_event_trace follows an inner call up to its root call and lists the tree in log order', async () => {
    const agent = await agents.create(tenantA, { preset: 'standard' });
    const ev = (type: string, callId: string, parentCallId: string | undefined, data: object) => ({
      sessionId: agent.id,
      type,
      surface: parentCallId === undefined ? ('current' as const) : ('log-only' as const),
      callId,
      ...(parentCallId === undefined ? {} : { parentCallId }),
      data: data as never,
    });
    // A program (root r1) calls a workflow-like tool (w1) that calls read (i1); another root call
    // (r2) interleaves and is not part of the tree.
    store.events.append([
      ev('tool.call', 'r1', undefined, { name: 'run_code', arguments: {} }),
      ev('tool.call', 'r2', undefined, { name: 'glob', arguments: {} }),
      ev('tool.call', 'w1', 'r1', { name: 'workflow', arguments: {} }),
      ev('tool.call', 'i1', 'w1', { name: 'read', arguments: { file_path: 'x' } }),
      ev('tool.result', 'r2', undefined, { name: 'glob', ok: true }),
      ev('tool.result', 'i1', 'w1', { name: 'read', ok: true, content: [{ type: 'text', text: 'deep' }] }),
      ev('tool.result', 'w1', 'r1', { name: 'workflow', ok: true }),
      ev('tool.result', 'r1', undefined, { name: 'run_code', ok: true }),
    ]);
    await store.events.flush();
    const result = await call(agent, 'session_event_trace', { seq: 6 });
    const trace = result.value as Loose;
    expect(trace.root).toEqual({ call_id: 'r1', seq: 1, name: 'run_code' });
    expect(trace.events.map((e: Loose) => [e.seq, e.call_id, e.depth])).toEqual([
      [1, 'r1', 0],
      [3, 'w1', 1],
      [4, 'i1', 2],
      [6, 'i1', 2],
      [7, 'w1', 1],
      [8, 'r1', 0],
    ]);
    expect(trace.truncated).toBe(false);
  });
});

describe('walls', () => {
  it("another tenant's agent never sees tenant A's sessions", async () => {
    const agentB = await agents.create(tenantB, { preset: 'standard' });
    expect(((await call(agentB, 'session_search', { query: MARKER })).value as Loose).sessions).toEqual([]);
    expect(
      ((await call(agentB, 'session_search', { query: MARKER, session_ids: [agentA.id] })).value as Loose)
        .sessions,
    ).toEqual([]);
    for (const [name, args] of [
      ['session_event_search', { session_id: agentA.id, query: MARKER }],
      ['session_event_read', { session_id: agentA.id, seq: markerSeq }],
      ['session_event_trace', { session_id: agentA.id, seq: markerSeq }],
      ['session_trace', { session_id: agentA.id }],
    ] as const) {
      const result = await call(agentB, name, args);
      expect(result.error?.code, name).toBe('NOT_FOUND');
    }
  });

  it('a policy of sessions: "own" keeps an agent to its own session', async () => {
    const narrow = await agents.create(tenantA, { preset: 'standard', policy: { sessions: 'own' } });
    expect(((await call(narrow, 'session_search', { query: MARKER })).value as Loose).sessions).toEqual([]);
    const denied = await call(narrow, 'session_event_read', { session_id: agentA.id, seq: markerSeq });
    expect(denied.error?.code).toBe('DENIED');
    const own = await call(narrow, 'session_event_search', { query: 'session_search' });
    expect((own.value as Loose).hits.length).toBeGreaterThan(0);
  });

  it("a deleted agent's log stays searchable as persisted", async () => {
    const gone = await agents.create(tenantA, { preset: 'standard' });
    await call(gone, 'schedule_list', {});
    await agents.delete(tenantA, gone.id);
    const found = await call(agentA, 'session_search', {
      query: 'schedule_list',
      availability: ['persisted'],
    });
    expect((found.value as Loose).sessions).toEqual([
      expect.objectContaining({ session_id: gone.id, availability: 'persisted' }),
    ]);
  });
});
