// Several control-plane replicas on one PostgreSQL database, each a process of its own, with the
// real Docker engine and isolate host: an agent is used through any replica (the one that does not
// run it forwards to the one that does); a `kill -9` of the owner in the middle of a batch loses
// nothing (another replica takes the family over once its lease ran out, every logged call has
// exactly one result, the seqs have no gap, and a retry with the same Idempotency-Key runs no call
// twice); and an owner stopped past its lease and then resumed writes nothing more.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { postgresMissing } from '../../helpers/postgres.ts';
import { until } from '../../helpers/until.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { readSse } from '../../unit/api/sse.ts';
import { type Cluster, exited, type Replica, startCluster } from './cluster.ts';

/** Short leases, so a fail-over takes seconds: the lease is renewed every fifth of it. */
const LEASE_MS = 3000;

const missing = postgresMissing();
const suite = missing === undefined ? describe : describe.skip;

suite(`replicas on one PostgreSQL database${missing === undefined ? '' : ` [skipped: ${missing}]`}`, () => {
  let cluster: Cluster;
  let a: Replica;
  let b: Replica;

  beforeAll(async () => {
    cluster = await startCluster(['replica-a', 'replica-b'], LEASE_MS);
    [a, b] = cluster.replicas as [Replica, Replica];
  }, 120_000);
  afterAll(async () => {
    await cluster?.close();
  });
  // A test that killed A and failed before starting it again must not fail the next ones.
  beforeEach(async () => {
    if (a !== undefined && (a.child.exitCode !== null || a.child.signalCode !== null))
      a = await cluster.start('replica-a');
  }, 120_000);

  const bash = (id: string, command: string) => ({
    id,
    name: 'bash',
    arguments: { command, description: id },
  });
  const events = async (via: Replica, agentId: string): Promise<Loose[]> =>
    (await cluster.request(via, 'GET', `/v1/agents/${agentId}/events?limit=5000`)).json.events as Loose[];

  /** Every logged tool.call has exactly one tool.result, and the seqs run 1, 2, 3… without a gap. */
  const expectWholeLog = (log: Loose[]) => {
    expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1));
    const calls = log.filter((e) => e.type === 'tool.call').map((e) => `${e.parentCallId ?? ''}/${e.callId}`);
    const results = log
      .filter((e) => e.type === 'tool.result')
      .map((e) => `${e.parentCallId ?? ''}/${e.callId}`);
    expect(new Set(calls).size).toBe(calls.length);
    expect([...results].sort()).toEqual([...calls].sort());
  };

  it('serves an agent made through one replica through the other: calls, files, events and its stream', async () => {
    const agent = (await cluster.request(a, 'POST', '/v1/agents', {})).json;
    const first = await cluster.request(a, 'POST', `/v1/agents/${agent.id}/calls`, {
      calls: [bash('one', 'echo made-on-a > /workspace/note.txt')],
    });
    expect(first.json.results[0]).toMatchObject({ ok: true });

    const viaB = await cluster.request(b, 'POST', `/v1/agents/${agent.id}/calls`, {
      calls: [bash('two', 'cat /workspace/note.txt')],
    });
    expect(viaB.status).toBe(200);
    expect(JSON.stringify(viaB.json.results[0].content)).toContain('made-on-a');

    // Its live stream through B shows a call made through A, once durable.
    const stream = await fetch(`${b.url}/v1/agents/${agent.id}/events?after=0`, {
      headers: { Authorization: `Bearer ${cluster.key}`, Accept: 'text/event-stream' },
    });
    expect(stream.status).toBe(200);
    const seen = readSse(stream.body as ReadableStream<Uint8Array>, (messages) =>
      messages.some((m) => m.data?.type === 'tool.result' && m.data?.callId === 'three'),
    );
    await cluster.request(a, 'POST', `/v1/agents/${agent.id}/calls`, { calls: [bash('three', 'true')] });
    await seen;

    const log = await events(b, agent.id);
    expect(log.filter((e) => e.type === 'tool.result').map((e) => e.callId)).toEqual(['one', 'two', 'three']);
    expectWholeLog(log);
  });

  it('loses no call when the owner is killed in the middle of a batch, and a retry with its key runs nothing twice', {
    timeout: 180_000,
  }, async () => {
    const agent = (await cluster.request(a, 'POST', '/v1/agents', {})).json;
    // A runs the family (its first call went there).
    await cluster.request(a, 'POST', `/v1/agents/${agent.id}/calls`, { calls: [bash('start', 'true')] });
    // A full batch (64 calls, the most one may hold).
    const calls = Array.from({ length: 64 }, (_, i) => bash(`c${i}`, `echo c${i} >> /workspace/ran.txt`));
    const key = 'batch-64';
    const batch = cluster
      .request(b, 'POST', `/v1/agents/${agent.id}/calls`, { calls }, { 'Idempotency-Key': key })
      .catch((error: unknown) => error);
    await until(
      async () =>
        (await events(a, agent.id)).filter((e) => e.type === 'tool.result' && e.callId !== 'start').length >=
        10,
      { what: 'the batch under way on A', timeoutMs: 60_000 },
    );
    a.child.kill('SIGKILL');
    await exited(a.child);
    const first = await batch;
    // The forwarded request died with its owner: B says so (or the connection ended).
    if (!(first instanceof Error)) expect([502, 503]).toContain((first as { status: number }).status);

    // The client retries with the same key until B has taken the family over.
    const retried = await until(
      async () => {
        const r = await cluster.request(
          b,
          'POST',
          `/v1/agents/${agent.id}/calls`,
          { calls },
          { 'Idempotency-Key': key },
        );
        return r.status === 200 ? r : undefined;
      },
      { what: 'B answering the retried batch', timeoutMs: 60_000, intervalMs: 250 },
    );
    const results = retried.json.results as Loose[];
    expect(results).toHaveLength(64);
    const ok = results.filter((r) => r.ok).length;
    // Some ran to a durable result before the kill (a list also shows events still queued, which
    // the kill may lose: those calls end INTERRUPTED like the ones that never ran).
    expect(ok).toBeGreaterThanOrEqual(1);
    for (const r of results.filter((x) => !x.ok)) expect(r.error.code).toBe('INTERRUPTED');

    const log = await events(b, agent.id);
    expectWholeLog(log);
    // The retry's answer is the log's: each call's logged result, ok or INTERRUPTED.
    const logged = new Map(
      log.filter((e) => e.type === 'tool.result').map((e) => [e.callId as string, e.data.ok as boolean]),
    );
    expect(results.map((r) => [r.id, r.ok])).toEqual(results.map((r) => [r.id, logged.get(r.id) ?? false]));
    // No call ran twice: each line at most once in the file the calls appended to.
    const ran = await cluster.request(b, 'POST', `/v1/agents/${agent.id}/calls`, {
      calls: [bash('count', 'sort /workspace/ran.txt | uniq -d | wc -l; wc -l < /workspace/ran.txt')],
    });
    const [dupes, lines] = String(ran.json.results[0].content[0].text).trim().split(/\s+/).map(Number);
    expect(dupes).toBe(0);
    expect(lines).toBeGreaterThanOrEqual(ok);
    expect(lines).toBeLessThanOrEqual(64);
    a = await cluster.start('replica-a');
  });

  it('an owner stopped past its lease and then resumed writes nothing more to the family', {
    timeout: 180_000,
  }, async () => {
    const agent = (await cluster.request(a, 'POST', '/v1/agents', {})).json;
    await cluster.request(a, 'POST', `/v1/agents/${agent.id}/calls`, { calls: [bash('start', 'true')] });
    const stream = await fetch(`${a.url}/v1/agents/${agent.id}/events`, {
      headers: { Authorization: `Bearer ${cluster.key}`, Accept: 'text/event-stream' },
    });
    const logged = readSse(stream.body as ReadableStream<Uint8Array>, (messages) =>
      messages.some((m) => m.data?.type === 'tool.call' && m.data?.callId === 'slow'),
    );
    const slow = cluster
      .request(a, 'POST', `/v1/agents/${agent.id}/calls`, { calls: [bash('slow', 'sleep 2; echo late')] })
      .catch((error: unknown) => error);
    await logged;
    a.child.kill('SIGSTOP');
    // B takes the family once A's lease ran out, and repairs the call A left running.
    const repaired = await until(
      async () => {
        const r = await cluster.request(b, 'GET', `/v1/agents/${agent.id}/events?limit=5000`);
        if (r.status !== 200) return undefined;
        const log = r.json.events as Loose[];
        return log.some((e) => e.type === 'tool.result' && e.callId === 'slow') ? log : undefined;
      },
      { what: 'B taking the family over', timeoutMs: 60_000, intervalMs: 250 },
    );
    expect(repaired.find((e) => e.type === 'tool.result' && e.callId === 'slow')?.data.error.code).toBe(
      'INTERRUPTED',
    );
    a.child.kill('SIGCONT');
    await slow; // A's batch ends (its result is refused by the database, or dropped)
    await until(() => a.lines.some((line) => line.includes(`family ${agent.id} is run by another replica`)), {
      what: 'A telling it lost the family',
      timeoutMs: 30_000,
    });
    const after = await cluster.request(b, 'POST', `/v1/agents/${agent.id}/calls`, {
      calls: [bash('after', 'true')],
    });
    expect(after.json.results[0]).toMatchObject({ ok: true });
    const log = await events(b, agent.id);
    expectWholeLog(log);
    expect(log.filter((e) => e.type === 'tool.result').map((e) => [e.callId, e.data.ok])).toEqual([
      ['start', true],
      ['slow', false],
      ['after', true],
    ]);
  });
  it('an approval answered through B wakes the call waiting on A, and a delete through B stops its work on A', {
    timeout: 120_000,
  }, async () => {
    const asking = (await cluster.request(a, 'POST', '/v1/agents', { policy: { ask: ['bash'] } })).json;
    const waiting = cluster.request(a, 'POST', `/v1/agents/${asking.id}/calls`, {
      calls: [bash('asked', 'echo approved')],
    });
    const pending = await until(
      async () =>
        (await cluster.request(b, 'GET', `/v1/agents/${asking.id}/requests?state=pending`)).json
          .requests?.[0],
      { what: 'the approval, seen through B' },
    );
    expect(pending).toMatchObject({ kind: 'approval', callId: 'asked' });
    expect(
      (await cluster.request(b, 'POST', `/v1/agents/${asking.id}/requests/${pending.id}`, { allow: true }))
        .status,
    ).toBe(200);
    expect(JSON.stringify((await waiting).json.results[0].content)).toContain('approved');

    const doomed = (await cluster.request(a, 'POST', '/v1/agents', {})).json;
    const sleeping = cluster.request(a, 'POST', `/v1/agents/${doomed.id}/calls`, {
      calls: [bash('nap', 'sleep 60')],
    });
    await until(
      async () => (await events(a, doomed.id)).some((e) => e.type === 'tool.call' && e.callId === 'nap'),
      {
        what: 'the sleep under way on A',
      },
    );
    expect((await cluster.request(b, 'DELETE', `/v1/agents/${doomed.id}`)).status).toBe(204);
    const [ended] = (await sleeping).json.results as Loose[];
    expect(ended.ok).toBe(false);
    expect(ended.durationMs).toBeLessThan(50_000); // stopped, not slept through
  });

  it('a schedule due while its owner is dead fires once, on the replica that took the family over', {
    timeout: 180_000,
  }, async () => {
    const agent = (await cluster.request(a, 'POST', '/v1/agents', {})).json;
    const made = await cluster.request(a, 'POST', `/v1/agents/${agent.id}/calls`, {
      calls: [{ id: 'remind', name: 'schedule_create', arguments: { prompt: 'wake up', after_seconds: 3 } }],
    });
    expect(made.json.results[0]).toMatchObject({ ok: true });
    a.child.kill('SIGKILL');
    await exited(a.child);
    const fired = async () =>
      (await cluster.request(b, 'GET', `/v1/agents/${agent.id}/events?limit=5000`)).json.events?.filter(
        (e: Loose) => e.type === 'schedule.fired',
      ) ?? [];
    await until(async () => (await fired()).length > 0, {
      what: 'the schedule fired by B',
      timeoutMs: 90_000,
      intervalMs: 500,
    });
    // Another look after B's scheduler has looked again (every 5 s): still once.
    await new Promise((resolve) => setTimeout(resolve, 6000));
    expect(await fired()).toHaveLength(1);
    expect(
      (await cluster.request(b, 'GET', `/v1/agents/${agent.id}/requests?state=pending`)).json.requests.filter(
        (r: Loose) => r.kind === 'reminder',
      ),
    ).toHaveLength(1);
    a = await cluster.start('replica-a');
  });
});
