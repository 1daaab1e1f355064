// Several control-plane replicas on one PostgreSQL database, each a process of its own, with the
// real Docker engine and isolate host: an agent is used through any replica (the one that does not
// run it forwards to the one that does); a `kill -9` of the owner in the middle of a batch loses
// nothing (another replica takes the family over once its lease ran out, every logged call has
// exactly one result, the seqs have no gap, and a retry with the same Idempotency-Key runs no call
// twice), in a batch and in a run_code program; an owner stopped past its lease and then resumed
// writes nothing more; terminals' WebSockets and the agent's MCP endpoint work through a replica
// that does not run the agent; three replicas serve one agent; and each replica keeps its warm
// pool on the shared engine (a starting replica removes only a dead one's).
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import Docker from 'dockerode';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { postgresMissing } from '../../helpers/postgres.ts';
import { until } from '../../helpers/until.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { readSse } from '../../unit/api/sse.ts';
import { type Cluster, exited, type Replica, startCluster } from './cluster.ts';

/** Short leases, so a fail-over takes seconds: the lease is renewed every fifth of it. */
const LEASE_MS = 5000;

const missing = postgresMissing();
const suite = missing === undefined ? describe : describe.skip;

suite(`replicas on one PostgreSQL database${missing === undefined ? '' : ` [skipped: ${missing}]`}`, () => {
  let cluster: Cluster;
  let a: Replica;
  let b: Replica;
  let c: Replica;

  beforeAll(async () => {
    cluster = await startCluster(['replica-a', 'replica-b', 'replica-c'], LEASE_MS, { poolSize: 1 });
    [a, b, c] = cluster.replicas as [Replica, Replica, Replica];
  }, 180_000);
  afterAll(async () => {
    await cluster?.close();
  });
  // A test that stopped or killed A and failed before resuming or starting it again must not fail
  // the next ones.
  beforeEach(async () => {
    a?.child.kill('SIGCONT');
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

  const docker = new Docker();
  /** The unassigned warm-pool containers of the replicas, with their owner (`<replica id>:<start>`). */
  const pools = async () =>
    (
      await docker.listContainers({
        all: true,
        filters: { label: [`dsh.test=${cluster.runId}`, 'dsh.pool=1'] },
      })
    )
      .filter((x) => x.Names.some((n) => n.includes('-pool-')))
      .map((x) => ({ id: x.Id, owner: x.Labels['dsh.pool.owner'] ?? '' }));
  /** How long ago the replica (lease holder) last renewed, by the database's clock; undefined: unknown. */
  const heartbeatAge = async (holder: string): Promise<number | undefined> => {
    const client = new pg.Client({ connectionString: cluster.database.url });
    await client.connect();
    try {
      const { rows } = await client.query(
        'SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint - heartbeat_at AS age FROM replicas WHERE id = $1',
        [holder],
      );
      return rows[0] === undefined ? undefined : Number(rows[0].age);
    } finally {
      await client.end();
    }
  };

  it("each replica keeps its warm pool on the shared engine; a starting replica removes only a dead one's", {
    timeout: 180_000,
  }, async () => {
    const before = await until(
      async () => {
        const listed = await pools();
        const owners = new Set(listed.map((x) => x.owner.split(':')[0]));
        return listed.length === 3 && owners.size === 3 ? listed : undefined;
      },
      { what: 'one pool container of each replica', timeoutMs: 120_000, intervalMs: 250 },
    );
    const ofC = before.find((x) => x.owner.startsWith('replica-c:'));
    if (ofC === undefined) throw new Error('no pool container of replica-c');
    c.child.kill('SIGKILL');
    await exited(c.child);
    // C counts as dead once its heartbeat is older than a lease.
    await until(async () => ((await heartbeatAge(ofC.owner)) ?? 0) > LEASE_MS, {
      what: "C's heartbeat older than a lease",
      timeoutMs: 30_000,
      intervalMs: 250,
    });
    c = await cluster.start('replica-c');
    // Its start (adopt, before it listens) removed its former process's pool, and only that.
    const after = (await pools()).map((x) => x.id);
    expect(after).not.toContain(ofC.id);
    for (const live of before.filter((x) => x !== ofC)) expect(after).toContain(live.id);
    await until(
      async () => (await pools()).some((x) => x.owner.startsWith('replica-c:') && x.owner !== ofC.owner),
      { what: "the new C's own pool", timeoutMs: 60_000, intervalMs: 250 },
    );
  });

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

  /** A workspace file's text, through `via` (GET /files answers its bytes). */
  const fileText = async (via: Replica, agentId: string, path: string): Promise<string> => {
    const res = await fetch(`${via.url}/v1/agents/${agentId}/files?path=${encodeURIComponent(path)}`, {
      headers: { Authorization: `Bearer ${cluster.key}` },
    });
    expect(res.status).toBe(200);
    return res.text();
  };

  it('loses no inner call when the owner is killed in the middle of a run_code program, and its retry runs nothing twice', {
    timeout: 180_000,
  }, async () => {
    const agent = (await cluster.request(a, 'POST', '/v1/agents', { preset: 'code' })).json;
    const program = (id: string, code: string) => ({
      id,
      name: 'run_code',
      arguments: { code, description: id },
    });
    // A runs the family (its first call went there).
    const started = await cluster.request(a, 'POST', `/v1/agents/${agent.id}/calls`, {
      calls: [program('start', 'return 1;')],
    });
    expect(started.json.results[0]).toMatchObject({ ok: true });
    // One program, many tool calls in a row, each appending its number to a file.
    const calls = [
      program(
        'loop',
        "for (let i = 0; i < 300; i++) await tools.bash({ command: 'echo ' + i + ' >> /workspace/ran.txt', description: 'step ' + i }); return 'all done';",
      ),
    ];
    const key = 'program-300';
    const batch = cluster
      .request(b, 'POST', `/v1/agents/${agent.id}/calls`, { calls }, { 'Idempotency-Key': key })
      .catch((error: unknown) => error);
    const innerResults = (log: Loose[]) =>
      log.filter((e) => e.type === 'tool.result' && e.parentCallId === 'loop');
    await until(async () => innerResults(await events(a, agent.id)).length >= 10, {
      what: 'the program under way on A',
      timeoutMs: 60_000,
      intervalMs: 100,
    });
    a.child.kill('SIGKILL');
    await exited(a.child);
    const first = await batch;
    if (!(first instanceof Error)) expect([502, 503]).toContain((first as { status: number }).status);

    const retry = () =>
      cluster.request(b, 'POST', `/v1/agents/${agent.id}/calls`, { calls }, { 'Idempotency-Key': key });
    const retried = await until(
      async () => {
        const r = await retry();
        return r.status === 200 ? r : undefined;
      },
      { what: 'B answering the retried program', timeoutMs: 60_000, intervalMs: 250 },
    );
    const [outcome] = retried.json.results as Loose[];
    expect(outcome.ok).toBe(false);
    expect(outcome.error.code).toBe('INTERRUPTED');

    const log = await events(b, agent.id);
    // Every call, the program and the tools.bash calls inside it (parentCallId), has one result.
    expectWholeLog(log);
    const inner = log.filter((e) => e.type === 'tool.call' && e.parentCallId === 'loop');
    const innerOk = innerResults(log).filter((e) => e.data.ok).length;
    // Some ran to a durable result before the kill (the list A answered also shows events still
    // queued, which the kill may lose: those calls end INTERRUPTED like the ones never run).
    expect(innerOk).toBeGreaterThanOrEqual(1);
    expect(inner.length).toBeLessThan(300);
    // Nothing ran twice: each step at most once in the file, in order, one line per call at most.
    const lines = (await fileText(b, agent.id, 'ran.txt')).trim().split('\n');
    expect(lines).toEqual(lines.map((_, i) => String(i)));
    expect(lines.length).toBeGreaterThanOrEqual(innerOk);
    // Not bounded by the logged calls: a call runs once its `tool.call` is queued, before it is
    // durable, so the kill can lose the record of a call that ran (never a record of one that did not).
    expect(lines.length).toBeLessThanOrEqual(300);
    // Once more with the key: the same answer from the log, and still nothing ran again.
    const again = await retry();
    expect(again.json.results).toEqual(retried.json.results);
    expect((await fileText(b, agent.id, 'ran.txt')).trim().split('\n')).toEqual(lines);
    expect((await events(b, agent.id)).length).toBe(log.length);
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
    let last = '';
    const repaired = await until(
      async () => {
        const r = await cluster.request(b, 'GET', `/v1/agents/${agent.id}/events?limit=5000`);
        last = `${r.status} ${JSON.stringify(r.json).slice(-2000)}`;
        if (r.status !== 200) return undefined;
        const log = r.json.events as Loose[];
        return log.some((e) => e.type === 'tool.result' && e.callId === 'slow') ? log : undefined;
      },
      { what: 'B taking the family over', timeoutMs: 60_000, intervalMs: 250 },
    ).catch((error: unknown) => {
      // What B last answered, and what both replicas printed: the fail-over's story.
      throw new Error(
        `${String(error)}\nlast answer: ${last}\nB:\n${b.lines.slice(-40).join('\n')}\nA:\n${a.lines.slice(-40).join('\n')}`,
      );
    });
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
    // The deleted agent's family let go of its lease: nobody renews it any more.
    const db = new pg.Client({ connectionString: cluster.database.url });
    await db.connect();
    try {
      const { rows } = await db.query('SELECT family_id FROM family_leases WHERE family_id = $1', [
        doomed.id,
      ]);
      expect(rows).toEqual([]);
    } finally {
      await db.end();
    }
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

  /** A WebSocket client that collects everything the server sends. */
  const socket = (
    url: string,
  ): Promise<{ ws: WebSocket; output: () => string; closed: Promise<{ code: number; reason: string }> }> =>
    new Promise((resolve, reject) => {
      const ws = new WebSocket(url, [], { headers: { Authorization: `Bearer ${cluster.key}` } });
      let out = '';
      const closed = new Promise<{ code: number; reason: string }>((r) =>
        ws.on('close', (code, reason) => r({ code, reason: reason.toString() })),
      );
      ws.on('message', (data: Buffer) => {
        out += data.toString();
      });
      ws.on('open', () => resolve({ ws, output: () => out, closed }));
      ws.on('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
      ws.on('error', reject);
    });

  it("a terminal's WebSocket through the replica that does not run the agent", {
    timeout: 120_000,
  }, async () => {
    const agent = (await cluster.request(a, 'POST', '/v1/agents', { preset: 'creator' })).json;
    const opened = await cluster.request(a, 'POST', `/v1/agents/${agent.id}/calls`, {
      calls: [{ id: 'open', name: 'terminal_open', arguments: { type: 'bash', name: 'shared' } }],
    });
    expect(opened.json.results[0]).toMatchObject({ ok: true });
    const tid = opened.json.results[0].value.sessionId as string;
    // A runs the family; B forwards the upgrade and the bytes both ways.
    const term = await socket(`${b.url.replace('http', 'ws')}/v1/agents/${agent.id}/terminals/${tid}`);
    term.ws.send(Buffer.from('echo through-$((40+2))\r'));
    await until(() => /through-42/.test(term.output()), { what: 'the echo through B', timeoutMs: 30_000 });
    term.ws.send(JSON.stringify({ type: 'resize', cols: 101, rows: 31 }));
    term.ws.send(Buffer.from('stty size\r'));
    await until(() => /[\r\n]31 101\r\n/.test(term.output()), {
      what: 'the resize through B',
      timeoutMs: 30_000,
    });
    // The terminal ends on A: the socket through B closes with it.
    term.ws.send(Buffer.from('exit 4\r'));
    expect((await term.closed).code).toBe(1000);
  });

  it("the agent's MCP endpoint through the replica that does not run the agent", {
    timeout: 120_000,
  }, async () => {
    const agent = (await cluster.request(a, 'POST', '/v1/agents', { preset: 'standard' })).json;
    await cluster.request(a, 'POST', `/v1/agents/${agent.id}/calls`, { calls: [bash('start', 'true')] });
    const client = new Client({ name: 'dsh-replicas-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${b.url}/v1/agents/${agent.id}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${cluster.key}` } },
    });
    try {
      await client.connect(transport); // initialize, forwarded to A
      const listed = await client.listTools();
      const surface = (await cluster.request(a, 'GET', `/v1/agents/${agent.id}/tools`)).json.tools as Loose[];
      expect(listed.tools.map((t) => t.name).sort()).toEqual(surface.map((t) => t.name).sort());
      expect(listed.tools.map((t) => t.name)).toContain('bash');
    } finally {
      await client.close().catch(() => undefined);
    }
  });

  it('three replicas: an agent made through C is used through A and B', { timeout: 120_000 }, async () => {
    const agent = (await cluster.request(c, 'POST', '/v1/agents', {})).json;
    const viaA = await cluster.request(a, 'POST', `/v1/agents/${agent.id}/calls`, {
      calls: [bash('one', 'echo from-a > /workspace/three.txt')],
    });
    expect(viaA.json.results[0]).toMatchObject({ ok: true });
    const viaB = await cluster.request(b, 'POST', `/v1/agents/${agent.id}/calls`, {
      calls: [bash('two', 'echo from-b >> /workspace/three.txt; cat /workspace/three.txt')],
    });
    expect(viaB.status).toBe(200);
    expect(JSON.stringify(viaB.json.results[0].content)).toContain('from-a\\nfrom-b');
    expect(await fileText(c, agent.id, 'three.txt')).toBe('from-a\nfrom-b\n');
    const log = await events(c, agent.id);
    expect(log.filter((e) => e.type === 'tool.result').map((e) => e.callId)).toEqual(['one', 'two']);
    expectWholeLog(log);
  });
});
