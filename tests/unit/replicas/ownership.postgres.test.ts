// Ownership of agent families across replicas, on the run's private PostgreSQL cluster: two
// replicas are two stores (two pools, two fences) on one database, as two processes would be.
// What a user of replicas relies on: a family has one owner at a time and the others are sent to
// it; a lease that ran out is taken over in a higher epoch, with the takeover hooks told the
// family's agents; and an owner that lost its family (paused past its lease) writes nothing more
// to the family's log, while the new owner's seqs follow what was stored, without a gap.
import { afterEach, beforeEach, expect, it } from 'vitest';
import { createFence, type ReplicaFence } from '../../../host/replicas/fence.ts';
import { createOwnership, type Ownership, type Takeover } from '../../../host/replicas/ownership.ts';
import { openPgStore } from '../../../host/store/pg/index.ts';
import type { Store } from '../../../host/store/store.ts';
import { createDatabase, describePostgres, type TestDatabase } from '../../helpers/postgres.ts';
import { until } from '../../helpers/until.ts';

const KEY = Buffer.alloc(32, 7);

interface Replica {
  id: string;
  store: Store;
  fence: ReplicaFence;
  ownership: Ownership;
  takeovers: Takeover[];
  lost: string[];
}

describePostgres('replicas on one PostgreSQL database', () => {
  let database: TestDatabase;
  const opened: Replica[] = [];

  const replica = async (id: string, ttlMs = 60_000, renewMs = 60_000): Promise<Replica> => {
    const fence = createFence(id);
    const store = await openPgStore({ url: database.url, secretsKey: KEY, fence, eventBatchWindowMs: 0 });
    const ownership = createOwnership({
      replicaId: id,
      leases: store.leases!,
      agents: store.agents,
      events: store.events,
      fence,
      ttlMs,
      renewMs,
    });
    const r: Replica = { id, store, fence, ownership, takeovers: [], lost: [] };
    ownership.onTakeover(async (t) => {
      r.takeovers.push(t);
    });
    ownership.onLost(({ familyId }) => r.lost.push(familyId));
    await ownership.start(`http://127.0.0.1:1/${id}`);
    opened.push(r);
    return r;
  };

  beforeEach(async () => {
    database = await createDatabase();
  });
  afterEach(async () => {
    for (const r of opened.splice(0)) {
      await r.ownership.close().catch(() => undefined);
      await r.store.close().catch(() => undefined);
    }
    await database.drop();
  });

  /** A tenant with a lead agent and its child: one family. */
  const family = async (store: Store) => {
    const tenant = await store.tenants.createTenant('t');
    const lead = await store.agents.create({
      tenantId: tenant.id,
      preset: 'default',
      mode: 'native',
      config: {},
    });
    const child = await store.agents.create({
      tenantId: tenant.id,
      preset: 'default',
      mode: 'native',
      config: {},
      links: { parentId: lead.id, role: 'child', depth: 1 },
    });
    return { tenantId: tenant.id, lead: lead.id, child: child.id };
  };

  it('gives a family one owner: the first replica to use it runs it, the other forwards to it', async () => {
    const a = await replica('replicaa');
    const b = await replica('replicab');
    const f = await family(a.store);
    expect(await a.ownership.route(f.tenantId, f.child)).toEqual({ kind: 'local' });
    expect(a.takeovers).toMatchObject([{ familyId: f.lead, epoch: 1 }]);
    expect([...a.takeovers[0]!.agentIds].sort()).toEqual([f.lead, f.child].sort());
    // The lead, asked for on the other replica, goes to the family's owner.
    expect(await b.ownership.route(f.tenantId, f.lead)).toMatchObject({
      kind: 'forward',
      url: 'http://127.0.0.1:1/replicaa',
      replicaId: 'replicaa',
    });
    // A forwarded request never travels on: the replica that does not run it says so.
    await expect(b.ownership.route(f.tenantId, f.lead, { forwarded: true })).rejects.toMatchObject({
      code: 'OWNER_MOVED',
    });
    expect(b.takeovers).toEqual([]);
  });

  it('hands the families over at a clean stop: the next replica takes them at once, one epoch up', async () => {
    const a = await replica('replicaa');
    const b = await replica('replicab');
    const f = await family(a.store);
    await a.ownership.route(f.tenantId, f.lead);
    await a.ownership.close();
    expect(await b.ownership.route(f.tenantId, f.child)).toEqual({ kind: 'local' });
    expect(b.takeovers).toMatchObject([{ familyId: f.lead, epoch: 2 }]);
  });

  it('takes over a family whose lease ran out, and the former owner writes nothing more to its log', async () => {
    const a = await replica('replicaa', 300);
    // B's own lease is long: its appends right after the takeover must not find its hold stale
    // on a loaded machine (a 300 ms lease is stale after 270 ms without a renewal).
    const b = await replica('replicab');
    const f = await family(a.store);
    await a.ownership.route(f.tenantId, f.lead);
    await a.store.events.append([{ sessionId: f.lead, type: 'note', surface: 'current', data: { n: 1 } }]);
    await a.store.events.flush();
    // A stops renewing (it is paused, as SIGSTOP would): after its lease, B takes the family.
    const taken = await until(async () => (await b.ownership.route(f.tenantId, f.lead)).kind === 'local', {
      what: 'B takes the family after the lease ran out',
    });
    expect(taken).toBe(true);
    expect(b.takeovers).toMatchObject([{ familyId: f.lead, epoch: 2 }]);
    const [two] = await b.store.events.append([
      { sessionId: f.lead, type: 'note', surface: 'current', data: { n: 2 } },
    ]);
    // What a call waits for before it runs (tools/call-log.ts): its record stored under B's epoch.
    await b.store.events.stored!(two!);
    // A wakes up and writes. Its own check would refuse the append (its hold is stale: the next
    // test); here the pause falls between that check and the write, so the database decides: it
    // refuses the write, A learns it lost the family, and drops the rows.
    a.fence.freshness(() => true);
    const [late] = await a.store.events.append([
      { sessionId: f.lead, type: 'note', surface: 'current', data: { n: 99 } },
    ]);
    // A call waiting for this record is told it was not written, so it never runs on A.
    await expect(a.store.events.stored!(late!)).rejects.toMatchObject({ code: 'OWNER_FENCED' });
    await until(() => a.lost.includes(f.lead), { what: 'A told it lost the family' });
    await a.store.events.flush();
    await b.store.events.append([{ sessionId: f.lead, type: 'note', surface: 'current', data: { n: 3 } }]);
    await b.store.events.flush();
    const stored = await b.store.events.list(f.lead);
    expect(stored.map((e) => [e.seq, e.data])).toEqual([
      [1, { n: 1 }],
      [2, { n: 2 }],
      [3, { n: 3 }],
    ]);
  });

  it('renews a held family, and counts it lost once the renewal finds it taken', async () => {
    const a = await replica('replicaa', 1500, 50);
    const b = await replica('replicab', 1500);
    const f = await family(a.store);
    await a.ownership.route(f.tenantId, f.lead);
    // Renewed every 50 ms, A keeps the family past its 1.5 s lease.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(await b.ownership.route(f.tenantId, f.lead)).toMatchObject({
      kind: 'forward',
      replicaId: 'replicaa',
    });
    // Taken behind A's back (an operator, or A paused long enough): A's next renewal finds it gone.
    await b.store.leases!.release(f.lead, 'replicaa');
    expect(await b.ownership.claim(f.tenantId, f.lead)).toBe(true);
    await until(() => a.lost.includes(f.lead), { what: 'A counts the family lost' });
    expect(a.fence.tokenOf(f.lead)).toBe('lost');
  });

  it('children made by the owner join the family at once (their events are fenced too)', async () => {
    const a = await replica('replicaa');
    const f = await family(a.store);
    await a.ownership.route(f.tenantId, f.lead);
    const late = await a.store.agents.create({
      tenantId: f.tenantId,
      preset: 'default',
      mode: 'native',
      config: {},
      links: { parentId: f.child, role: 'child', depth: 2 },
    });
    a.ownership.created(late);
    expect(a.fence.tokenOf(late.id)).toEqual({ familyId: f.lead, epoch: 1 });
  });
  it('refuses appends of a family whose hold was not confirmed within its lease (a stopped owner runs nothing more)', async () => {
    const a = await replica('replicaa', 300);
    const f = await family(a.store);
    await a.ownership.route(f.tenantId, f.lead);
    await a.store.events.append([{ sessionId: f.lead, type: 'note', surface: 'current', data: { n: 1 } }]);
    // No renewal runs (its timer is a minute away): past 90% of the lease the hold is stale.
    await until(
      () =>
        a.store.events.append([{ sessionId: f.lead, type: 'note', surface: 'current', data: {} }]).then(
          () => false,
          (error: { code?: string }) => error.code === 'OWNER_FENCED',
        ),
      { what: 'an append refused OWNER_FENCED' },
    );
  });
});
