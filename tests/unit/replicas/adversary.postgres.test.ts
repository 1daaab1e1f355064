// Ownership of agent families under attack, on the run's private PostgreSQL cluster (two replicas
// as two stores on one database, as in ownership.postgres.test.ts): what a tenant can make a
// replica do with another tenant's agent ids, and what garbage ids cost.
// What a tenant relies on: an agent of another tenant is, to it, exactly an agent that does not
// exist (no forward, no lease taken, no takeover run in its name), whatever a replica remembers.
// And bad luck: a stopped owner that resumes serves nothing of a family another replica took,
// and a starved owner's late renewal keeps its family rather than handing it to the one resuming.
import { afterEach, beforeEach, expect, it } from 'vitest';
import { createFence, type ReplicaFence } from '../../../host/replicas/fence.ts';
import { createOwnership, type Ownership, type Takeover } from '../../../host/replicas/ownership.ts';
import type { LeaseStore } from '../../../host/store/leases-port.ts';
import { openPgDatabase } from '../../../host/store/pg/db.ts';
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
  lost: { familyId: string; tenantId: string }[];
}

describePostgres('replicas against a hostile tenant', () => {
  let database: TestDatabase;
  const opened: Replica[] = [];

  const replica = async (
    id: string,
    ttlMs = 60_000,
    wrap: (leases: LeaseStore) => LeaseStore = (leases) => leases,
  ): Promise<Replica> => {
    const fence = createFence(id);
    const store = await openPgStore({ url: database.url, secretsKey: KEY, fence, eventBatchWindowMs: 0 });
    const ownership = createOwnership({
      replicaId: id,
      leases: wrap(store.leases!),
      agents: store.agents,
      events: store.events,
      fence,
      ttlMs,
      renewMs: 60_000,
    });
    const r: Replica = { id, store, fence, ownership, takeovers: [], lost: [] };
    ownership.onTakeover(async (t) => {
      r.takeovers.push(t);
    });
    ownership.onLost(({ familyId, tenantId }) => r.lost.push({ familyId, tenantId }));
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

  /** Tenant B's family (a lead and its child) and tenant A, who knows B's ids. */
  const tenants = async (store: Store) => {
    const victim = await store.tenants.createTenant('victim');
    const attacker = await store.tenants.createTenant('attacker');
    const lead = await store.agents.create({
      tenantId: victim.id,
      preset: 'default',
      mode: 'native',
      config: {},
    });
    const child = await store.agents.create({
      tenantId: victim.id,
      preset: 'default',
      mode: 'native',
      config: {},
      links: { parentId: lead.id, role: 'child', depth: 1 },
    });
    return { victim: victim.id, attacker: attacker.id, lead: lead.id, child: child.id };
  };

  it("routes another tenant's agent as an unknown one, even where the replica remembers its family", async () => {
    const a = await replica('replicaa');
    const b = await replica('replicab');
    const t = await tenants(a.store);
    expect(await a.ownership.route(t.victim, t.lead)).toEqual({ kind: 'local' });
    // B forwarded the victim's requests to A, so it remembers the victim's family.
    expect(await b.ownership.route(t.victim, t.child)).toMatchObject({
      kind: 'forward',
      replicaId: 'replicaa',
    });
    // The attacker names the victim's agents through B: answered here as unknown (NOT_FOUND), not
    // forwarded to the owner (which tells the attacker the id exists, and who runs it).
    expect(await b.ownership.route(t.attacker, t.child)).toEqual({ kind: 'local' });
    expect(await b.ownership.route(t.attacker, t.lead)).toEqual({ kind: 'local' });
    expect(b.takeovers).toEqual([]);
  });

  it("takes no lease of another tenant's family, and never takes one over in the wrong tenant's name", async () => {
    const a = await replica('replicaa');
    const b = await replica('replicab');
    const t = await tenants(a.store);
    await a.ownership.route(t.victim, t.lead);
    expect(await b.ownership.route(t.victim, t.lead)).toMatchObject({ kind: 'forward' });
    // A stops cleanly: its leases end, the victim's family is free to take.
    await a.ownership.close();
    // B's forward to A failed meanwhile (A is gone): B reads the lease again on the next request.
    b.ownership.unreachable(t.victim, t.lead);
    // The attacker's request for the victim's agent through B takes nothing.
    expect(await b.ownership.route(t.attacker, t.lead)).toEqual({ kind: 'local' });
    expect(b.takeovers).toEqual([]);
    expect(b.fence.holds(t.lead)).toBe(false);
    expect((await b.store.leases!.lease(t.lead))?.replicaId).toBe('replicaa');
    // The victim's own next request takes it over, in the victim's name, with its whole family
    // (the repair of the child's interrupted calls and its plugins depend on that list).
    expect(await b.ownership.route(t.victim, t.lead)).toEqual({ kind: 'local' });
    expect(b.takeovers).toHaveLength(1);
    expect(b.takeovers[0]).toMatchObject({ familyId: t.lead, tenantId: t.victim, epoch: 2 });
    expect([...b.takeovers[0]!.agentIds].sort()).toEqual([t.lead, t.child].sort());
  });

  // A gap of family.ts's design, left for its owner: an agent's family is its topmost LIVE ancestor,
  // so a child whose parent is deleted first (removeAgent marks a family's agents deleted
  // concurrently, not deepest first; or a child's mark failed) is its own family to a replica that
  // had not seen it, while the owner still runs it in its parent's family: two replicas each hold
  // a lease that covers the child's session and both write its log (seqs collide). The fix: the
  // family follows links alone, deleted ancestors included (a port read of a record's parent
  // whatever its deletion), or removeAgent marks children before their parent in order.
  it.skip('keeps a child whose parent was deleted first in the family its owner runs it in', async () => {
    const a = await replica('replicaa');
    const b = await replica('replicab');
    const t = await tenants(a.store);
    expect(await a.ownership.route(t.victim, t.child)).toEqual({ kind: 'local' });
    await a.store.agents.markDeleted(t.victim, t.lead);
    // A still runs the child (in the lead's family); B must send it there, not take it.
    expect(await b.ownership.route(t.victim, t.child)).toMatchObject({
      kind: 'forward',
      replicaId: 'replicaa',
    });
    expect(b.takeovers).toEqual([]);
  });

  // Found by this pass: a family once taken was held until the replica stopped, deleted or not, and
  // every renewal (a fifth of the lease) rewrites every row it holds: one renewal of 1,000 / 10,000
  // / 50,000 held families took 10 / 150 / 630 ms of the database (2 shared cores), so a tenant
  // creating, using and deleting agents in a loop grew both without bound. Now a deleted top-level
  // agent's family lets go of its lease once delete() is done (AgentServiceOptions.onRemoved).
  // Still held: a family idle for long (handing idle ones back is not built).
  it("lets go of a family once its agents are deleted (a tenant's churn does not pile up leases)", async () => {
    const a = await replica('replicaa');
    const t = await tenants(a.store);
    expect(await a.ownership.route(t.victim, t.lead)).toEqual({ kind: 'local' });
    await a.store.agents.markDeleted(t.victim, t.child);
    await a.store.agents.markDeleted(t.victim, t.lead);
    await a.ownership.deleted(t.victim, t.lead); // what the agent service tells it after delete()
    expect(a.ownership.held()).toEqual([]);
    expect(await a.store.leases!.lease(t.lead)).toBeUndefined();
    expect(await a.store.leases!.renew('replicaa', 60_000)).toEqual([]);
  });

  it('serves nothing here once its hold is stale and another replica took the family (a stopped owner resumes)', async () => {
    // A's renewal never runs meanwhile: as a process stopped (SIGSTOP) past its lease, whose
    // overdue renewal has not answered yet when it reads the request that waited for it.
    const a = await replica('replicaa', 300);
    const b = await replica('replicab', 300);
    const t = await tenants(a.store);
    expect(await a.ownership.route(t.victim, t.lead)).toEqual({ kind: 'local' });
    await until(async () => (await b.ownership.route(t.victim, t.lead)).kind === 'local', {
      what: 'B to take the family once the lease ran out',
    });
    // A must ask before it serves: the family is B's, so A forwards (it never runs it here).
    expect(await a.ownership.route(t.victim, t.child)).toMatchObject({
      kind: 'forward',
      replicaId: 'replicab',
    });
    expect(a.lost.map((l) => l.familyId)).toEqual([t.lead]);
    expect(await a.ownership.claim(t.victim, t.lead)).toBe(false);
  });

  it('keeps a family with its live holder: its late renewal keeps it, and a replica that resumed forwards to it instead of taking it back', async () => {
    // Neither renews on its own (renewMs is a minute): each renews when a request finds its hold
    // stale, as a process starved or stopped past its lease does on its next request.
    const a = await replica('replicaa', 2000);
    const b = await replica('replicab', 2000);
    const t = await tenants(a.store);
    expect(await a.ownership.route(t.victim, t.lead)).toEqual({ kind: 'local' });
    await until(async () => (await b.ownership.route(t.victim, t.lead)).kind === 'local', {
      what: "B to take the family once A's lease ran out",
    });
    // B is starved past its own lease; nobody takes the family meanwhile.
    await until(async () => (await b.store.leases!.lease(t.lead))?.expired === true, {
      what: "B's lease to run out",
    });
    // B's next request renews first: the late renewal keeps the family, in its epoch, with no loss
    // and no second takeover (before: B lost its own family and took it again, epoch 3).
    expect(await b.ownership.route(t.victim, t.child)).toEqual({ kind: 'local' });
    expect(b.lost).toEqual([]);
    expect(b.takeovers.map((x) => x.epoch)).toEqual([2]);
    // A resumes: it finds the family lost before it serves anything and forwards to B.
    expect(await a.ownership.route(t.victim, t.child)).toMatchObject({
      kind: 'forward',
      replicaId: 'replicab',
    });
    expect(a.lost.map((l) => l.familyId)).toEqual([t.lead]);
    expect(a.takeovers.map((x) => x.epoch)).toEqual([1]);
    expect(await a.store.leases!.lease(t.lead)).toMatchObject({ replicaId: 'replicab', epoch: 2 });
  }, 30_000);

  it('serves nothing here on the word of a renewal sent before it was stopped (its answer read on resuming)', async () => {
    // A's renewal runs in the database at once, but its answer reaches A only when the test says:
    // as a process stopped (SIGSTOP) between sending a renewal and reading its answer.
    let gate: Promise<void> | undefined;
    let open!: () => void;
    let answered = 0;
    const a = await replica('replicaa', 300, (leases) => ({
      ...leases,
      renew: async (...args) => {
        const answer = await leases.renew(...args);
        answered++;
        await gate;
        return answer;
      },
    }));
    const b = await replica('replicab', 300);
    const t = await tenants(a.store);
    expect(await a.ownership.route(t.victim, t.lead)).toEqual({ kind: 'local' });
    await until(async () => (await a.store.leases!.lease(t.lead))?.expired === true, {
      what: "A's lease to run out",
    });
    gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    // A request finds A's hold stale and asks: the renewal says "held" (nobody took it yet), and A stops.
    const asked = a.ownership.route(t.victim, t.child);
    await until(() => answered === 1, { what: "A's renewal to run in the database" });
    // Meanwhile its lease runs out again and B takes the family.
    await until(async () => (await b.ownership.route(t.victim, t.lead)).kind === 'local', {
      what: "B to take the family once A's lease ran out",
    });
    // A resumes and reads the old answer: it must ask again, find the family lost, and forward.
    open();
    expect(await asked).toMatchObject({ kind: 'forward', replicaId: 'replicab' });
    expect(a.lost.map((l) => l.familyId)).toEqual([t.lead]);
  }, 30_000);

  it('takes over a family whose stopped owner was in the middle of an event write (its lease row locked)', async () => {
    const a = await replica('replicaa', 300);
    const b = await replica('replicab', 300);
    const t = await tenants(a.store);
    expect(await a.ownership.route(t.victim, t.lead)).toEqual({ kind: 'local' });
    // A stopped (SIGSTOP) between its fence check and its COMMIT: the fence's FOR SHARE lock on
    // the lease row is held by a transaction whose connection stays open and says nothing.
    const stopped = openPgDatabase({ url: database.url, poolSize: 1 });
    let wake!: () => void;
    const asleep = new Promise<void>((resolve) => {
      wake = resolve;
    });
    let locked!: () => void;
    const holding = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const writing = stopped
      .tx(async (q) => {
        await q.query('SELECT family_id FROM family_leases WHERE family_id = $1 FOR SHARE', [t.lead]);
        locked();
        await asleep;
      })
      .catch(() => 'ended by the server');
    await holding;
    try {
      // Past A's lease, B takes the family: the database ends the stopped transaction, not B's wait.
      await until(async () => (await b.ownership.route(t.victim, t.lead)).kind === 'local', {
        what: 'B to take the family',
      });
      expect(b.takeovers).toMatchObject([{ familyId: t.lead, epoch: 2 }]);
    } finally {
      wake();
      await writing;
      await stopped.close().catch(() => undefined);
    }
  }, 30_000);

  it('costs a garbage agent id one read and no write: no lease row, no family remembered', async () => {
    const a = await replica('replicaa');
    const t = await tenants(a.store);
    for (let i = 0; i < 50; i++)
      expect(await a.ownership.route(t.attacker, `agt_garbage${i}`)).toEqual({ kind: 'local' });
    expect(await a.store.leases!.leases(Array.from({ length: 50 }, (_, i) => `agt_garbage${i}`))).toEqual([]);
    expect(a.ownership.held()).toEqual([]);
  });
});
