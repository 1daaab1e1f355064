// Replicas against a hostile client and bad luck, with real processes (cluster.ts: two `serve`
// replicas on one private PostgreSQL database, the real Docker engine): forged forwarding headers
// are refused whatever the tenant's key; another tenant's agent named through the replica that
// does not run it is, to the intruder, exactly an agent that does not exist (404, no forward, no
// lease taken); garbage agent ids cost no lease row; and a terminal tunnelled through the other
// replica ends once its owner is stopped past its lease (it hung for good before).

import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { openPgDatabase, type PgDatabase } from '../../../host/store/pg/db.ts';
import { createPgTenantStore } from '../../../host/store/pg/tenants.ts';
import { postgresMissing } from '../../helpers/postgres.ts';
import { until } from '../../helpers/until.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { type Cluster, type Replica, startCluster } from './cluster.ts';

const LEASE_MS = 3000;

const missing = postgresMissing();
const suite = missing === undefined ? describe : describe.skip;

suite(`replicas against a hostile client${missing === undefined ? '' : ` [skipped: ${missing}]`}`, () => {
  let cluster: Cluster;
  let a: Replica;
  let b: Replica;
  let db: PgDatabase;
  /** A second tenant's key: the intruder. */
  let intruder: string;

  beforeAll(async () => {
    cluster = await startCluster(['adv-a', 'adv-b'], LEASE_MS);
    [a, b] = cluster.replicas as [Replica, Replica];
    db = openPgDatabase({ url: cluster.database.url, poolSize: 2 });
    intruder = (await createPgTenantStore(db).createTenant('intruder')).apiKey;
  }, 120_000);
  afterAll(async () => {
    await db?.close();
    await cluster?.close();
  });

  const leaseOf = async (familyId: string) =>
    db.one<{ replica_id: string; epoch: string }>(
      'SELECT replica_id, epoch FROM family_leases WHERE family_id = $1',
      [familyId],
    );
  const leaseCount = async () =>
    Number((await db.one<{ n: string }>('SELECT count(*) AS n FROM family_leases'))?.n);

  it("answers another tenant's agent through the replica that does not run it as an unknown one", async () => {
    const agent = (await cluster.request(a, 'POST', '/v1/agents', {})).json;
    const used = await cluster.request(a, 'POST', `/v1/agents/${agent.id}/calls`, {
      calls: [
        {
          id: 'c1',
          name: 'bash',
          arguments: { command: 'echo secret > /workspace/s.txt', description: 'x' },
        },
      ],
    });
    expect(used.status).toBe(200);
    // B forwarded the victim's own requests, so it knows the family (and who runs it).
    expect((await cluster.request(b, 'GET', `/v1/agents/${agent.id}`)).status).toBe(200);
    const before = await leaseOf(agent.id);
    expect(before?.replica_id).toMatch(/^adv-a:/);

    const as = { Authorization: `Bearer ${intruder}` };
    for (const [method, path, body] of [
      ['GET', `/v1/agents/${agent.id}`, undefined],
      ['GET', `/v1/agents/${agent.id}/events`, undefined],
      ['GET', `/v1/agents/${agent.id}/files?path=s.txt`, undefined],
      [
        'POST',
        `/v1/agents/${agent.id}/calls`,
        {
          calls: [
            { id: 'c', name: 'bash', arguments: { command: 'cat /workspace/s.txt', description: 'x' } },
          ],
        },
      ],
      ['DELETE', `/v1/agents/${agent.id}`, undefined],
    ] as const) {
      for (const via of [a, b]) {
        const res = await cluster.request(via, method, path, body, as);
        expect(res.status, `${method} ${path} via ${via.id}`).toBe(404);
        expect(res.json.error.code).toBe('NOT_FOUND');
        expect(JSON.stringify(res.json)).not.toContain('secret');
        expect(JSON.stringify(res.json)).not.toContain('adv-a');
      }
    }
    // Same answer as an id that never existed (apart from the id itself).
    const garbage = await cluster.request(b, 'GET', '/v1/agents/agt_doesnotexist000', undefined, as);
    const known = await cluster.request(b, 'GET', `/v1/agents/${agent.id}`, undefined, as);
    expect(known.json.error.message.replaceAll(agent.id, 'ID')).toBe(
      garbage.json.error.message.replaceAll('agt_doesnotexist000', 'ID'),
    );
    expect(await leaseOf(agent.id)).toEqual(before);
    // The victim still has its agent and its file.
    const still = await cluster.request(b, 'GET', `/v1/agents/${agent.id}/files?path=s.txt`);
    expect(still.status).toBe(200);
  });

  it('costs garbage agent ids no lease row, on either replica', async () => {
    const rows = await leaseCount();
    for (let i = 0; i < 40; i++) {
      const res = await cluster.request(i % 2 === 0 ? a : b, 'POST', `/v1/agents/agt_junk${i}/calls`, {
        calls: [],
      });
      expect(res.status).toBe(404);
    }
    // Ids no agent could have (a slash, a dot segment, very long) are unknown too.
    for (const id of ['..', '%2e%2e', 'a%2Fb', 'x'.repeat(4000)])
      expect((await cluster.request(b, 'GET', `/v1/agents/${id}/events`)).status).toBeGreaterThanOrEqual(400);
    expect(await leaseCount()).toBe(rows);
  });

  it('runs a keyed batch once when its key races through both replicas, and keeps the key to its body and tenant', async () => {
    const agent = (await cluster.request(a, 'POST', '/v1/agents', {})).json;
    const body = {
      calls: [
        {
          id: 'k1',
          name: 'bash',
          arguments: {
            command: 'sleep 0.5; echo $RANDOM$RANDOM >> /workspace/runs; cat /workspace/runs',
            description: 'k1',
          },
        },
      ],
    };
    const key = { 'Idempotency-Key': `race-${agent.id}` };
    const answers = await Promise.all(
      [a, b, a, b].map((via) => cluster.request(via, 'POST', `/v1/agents/${agent.id}/calls`, body, key)),
    );
    expect(
      answers.map((r) => r.status),
      `${JSON.stringify(answers.map((r) => r.json?.error))}\nA:\n${a.lines.slice(-30).join('\n')}\nB:\n${b.lines.slice(-30).join('\n')}`,
    ).toEqual([200, 200, 200, 200]);
    const texts = answers.map((r) => JSON.stringify(r.json.results));
    expect(new Set(texts).size).toBe(1);
    const runs = await cluster.request(b, 'POST', `/v1/agents/${agent.id}/calls`, {
      calls: [{ id: 'n', name: 'bash', arguments: { command: 'wc -l < /workspace/runs', description: 'n' } }],
    });
    expect(JSON.stringify(runs.json.results[0].content)).toContain('1');
    expect(JSON.stringify(runs.json.results[0].content)).not.toMatch(/[2-9]/);
    // The same key with another body, through either replica: refused, nothing run.
    const other = {
      calls: [{ id: 'k1', name: 'bash', arguments: { command: 'echo other', description: 'k1' } }],
    };
    for (const via of [a, b]) {
      const res = await cluster.request(via, 'POST', `/v1/agents/${agent.id}/calls`, other, key);
      expect(res.status).toBe(422);
      expect(res.json.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    }
    // Another tenant replaying the key on the victim's agent learns nothing: the agent is unknown to it.
    const replay = await cluster.request(b, 'POST', `/v1/agents/${agent.id}/calls`, body, {
      ...key,
      Authorization: `Bearer ${intruder}`,
    });
    expect(replay.status).toBe(404);
    expect(JSON.stringify(replay.json)).not.toContain('results');
  });

  it("refuses a tenant's forged forwarding headers (posing as a replica), whatever its key", async () => {
    const agent = (await cluster.request(a, 'POST', '/v1/agents', {})).json;
    const forged: Record<string, string>[] = [
      { 'x-dsh-forwarded-by': 'adv-a' },
      { 'x-dsh-client-address': '203.0.113.9' },
      {
        'x-dsh-forwarded-by': 'adv-a',
        'x-dsh-forward-ts': String(Date.now()),
        'x-dsh-client-address': '203.0.113.9',
        'x-dsh-forward-sig': Buffer.alloc(32).toString('base64url'),
      },
    ];
    for (const headers of forged) {
      for (const via of [a, b]) {
        const res = await cluster.request(via, 'GET', `/v1/agents/${agent.id}`, undefined, headers);
        expect(res.status).toBe(401);
        expect(res.json.error.code).toBe('FORWARD_UNVERIFIED');
      }
    }
  });

  it('ends a terminal tunnelled through the other replica once its owner is stopped past its lease', async () => {
    const agent = (await cluster.request(a, 'POST', '/v1/agents', {})).json;
    const terminal = await cluster.request(a, 'POST', `/v1/agents/${agent.id}/terminals`, {});
    expect(terminal.status).toBe(201);
    const ws = new WebSocket(
      `${b.url.replace('http:', 'ws:')}/v1/agents/${agent.id}/terminals/${terminal.json.id}`,
      {
        headers: { Authorization: `Bearer ${cluster.key}` },
      },
    );
    let closed = false;
    ws.on('close', () => {
      closed = true;
    });
    ws.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    });
    a.child.kill('SIGSTOP');
    try {
      // B's renewal finds A's lease run out and ends what it forwarded there.
      await until(() => closed, { what: 'the tunnelled terminal to end', timeoutMs: 5 * LEASE_MS });
    } finally {
      a.child.kill('SIGCONT');
    }
    // The family answers again through B (which takes it over), terminal included.
    const listed = await until(
      async () => {
        const res = await cluster.request(b, 'GET', `/v1/agents/${agent.id}/terminals`);
        return res.status === 200 ? res : undefined;
      },
      { what: 'the family to answer through B', timeoutMs: 5 * LEASE_MS },
    );
    expect(JSON.stringify(listed.json)).toContain(terminal.json.id);
  });

  it('runs nothing for a request that reached the owner while it was stopped, once another replica took the family', async () => {
    const agent = (await cluster.request(a, 'POST', '/v1/agents', {})).json;
    const bash = (id: string, command: string) => ({
      calls: [{ id, name: 'bash', arguments: { command, description: id } }],
    });
    expect(
      (await cluster.request(a, 'POST', `/v1/agents/${agent.id}/calls`, bash('warm', 'true'))).status,
    ).toBe(200);
    a.child.kill('SIGSTOP');
    try {
      // B takes the family once A's lease ran out.
      await until(
        async () =>
          (await cluster.request(b, 'POST', `/v1/agents/${agent.id}/calls`, bash('b1', 'true'))).status ===
          200,
        { what: 'B to take the family over', timeoutMs: 10 * LEASE_MS },
      );
      // A client (a load balancer with a stale view) sends a call straight to A while it is stopped:
      // the kernel takes the connection and the bytes; A reads them when it resumes.
      const body = JSON.stringify(bash('late', 'echo ran-on-a > /workspace/split-brain'));
      const { port } = new URL(a.url);
      const socket = connect(Number(port), '127.0.0.1');
      socket.on('error', () => undefined);
      let answer = '';
      socket.on('data', (chunk: Buffer) => {
        answer += chunk.toString();
      });
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      await new Promise<void>((resolve) =>
        socket.write(
          `POST /v1/agents/${agent.id}/calls HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${cluster.key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
          () => resolve(),
        ),
      );
      a.child.kill('SIGCONT');
      await until(() => /\r\n\r\n/.test(answer), {
        what: "A's answer to the late request",
        timeoutMs: 5 * LEASE_MS,
      });
      socket.destroy();
      // Whatever A answered (it forwards the call to B, or refuses it), the call ran only where the
      // family is run: its file exists exactly when the family's log has its call and result.
      // A resumed replica forwards to B while B renews (a late renewal of B's keeps the family
      // too); only if B missed renewing for a whole lease and A asked first may A take it (B was
      // not a live holder then): the client is told OWNER_UNREACHABLE, "retry the request", and does.
      const seen = await until(
        async () => {
          const res = await cluster.request(
            b,
            'POST',
            `/v1/agents/${agent.id}/calls`,
            bash('look', 'ls /workspace'),
          );
          return res.status === 503 && res.json.error?.code === 'OWNER_UNREACHABLE' ? undefined : res;
        },
        { what: 'the family to answer through B', timeoutMs: 10 * LEASE_MS },
      );
      expect(
        seen.status,
        `${JSON.stringify(seen.json)}\nA:\n${a.lines.slice(-30).join('\n')}\nB:\n${b.lines.slice(-30).join('\n')}`,
      ).toBe(200);
      const ran = JSON.stringify(seen.json.results[0].content).includes('split-brain');
      const log = (await cluster.request(b, 'GET', `/v1/agents/${agent.id}/events?limit=5000`)).json
        .events as Loose[];
      const late = log.filter((e) => e.callId === 'late').map((e) => e.type);
      expect({ ran, late }).toEqual(ran ? { ran, late: ['tool.call', 'tool.result'] } : { ran, late: [] });
      expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1));
    } finally {
      a.child.kill('SIGCONT');
    }
  });

  // A stopped in its middle may be inside an event write (the fence's lock on the family's lease
  // row held by its open transaction): B's takeover waits until the database ends that
  // transaction (the pool's idle-in-transaction timeout, 10 s), not for as long as A is stopped.
  // Found by this pass (1 run in 3 before the fix): on resuming, A ran one more call of the batch
  // in the sandbox before its renewal found the family lost. Now every append of a family whose
  // hold is not confirmed within its lease is refused (OWNER_FENCED), a call's `tool.call` first,
  // so the call is not run (event-log-append.ts checkFence, the fence's freshness).
  it('runs no more calls of a batch on an owner stopped in its middle, once it resumes after a takeover', async () => {
    const agent = (await cluster.request(a, 'POST', '/v1/agents', {})).json;
    const call = (id: string, command: string) => ({
      id,
      name: 'bash',
      arguments: { command, description: id },
    });
    const lines = async (via: Replica): Promise<number> => {
      const res = await cluster.request(via, 'POST', `/v1/agents/${agent.id}/calls`, {
        calls: [call(`count${Date.now()}`, 'touch /workspace/side; wc -l < /workspace/side')],
      });
      return res.status === 200 ? Number(String(res.json.results[0].value?.stdout ?? '').trim()) : -1;
    };
    expect(
      (await cluster.request(a, 'POST', `/v1/agents/${agent.id}/calls`, { calls: [call('warm', 'true')] }))
        .status,
    ).toBe(200);
    const calls = Array.from({ length: 60 }, (_, i) =>
      call(`s${i}`, `echo ${i} >> /workspace/side; sleep 0.1`),
    );
    const batch = cluster
      .request(
        a,
        'POST',
        `/v1/agents/${agent.id}/calls`,
        { calls },
        { 'Idempotency-Key': `side-${agent.id}` },
      )
      .catch(() => undefined);
    await until(async () => (await lines(a)) >= 3, { what: 'the batch to be under way' });
    a.child.kill('SIGSTOP');
    let before: number;
    try {
      before = await until(
        async () => {
          const n = await lines(b);
          return n >= 0 ? n : undefined;
        },
        { what: 'B to take the family over', timeoutMs: 40_000 },
      );
      a.child.kill('SIGCONT');
      await until(() => a.lines.some((l) => l.includes(`family ${agent.id} is run by another replica`)), {
        what: 'A to find the family lost',
        timeoutMs: 5 * LEASE_MS,
      });
      await batch;
    } finally {
      a.child.kill('SIGCONT');
    }
    // Nothing of the batch ran on A after it resumed: the file has the lines it had at the takeover.
    expect(await lines(b)).toBe(before);
  });
});
