// The wake-up bus between two processes on one PostgreSQL database (host/store/pg/notify.ts), each
// process simulated by its own pool and bus (A and B), the way two replicas share a database:
// what B writes wakes A's waiters and drops A's caches at once. "At once" is shown without timing:
// A's backstops (the request poll, the mailbox wait's timeout, the key and agent TTLs) are made an
// hour long, or A's clock is frozen, so only the wake-up can be what ends each wait. Then the
// listening connection is terminated from a third connection: the bus reconnects, resyncs, and
// still hears wake-ups, and what changed without any wake-up (a request answered, an agent
// deleted) is picked up by the resync.
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { createDeletion } from '../../../host/agents/service/deletion.ts';
import { createAgentLookup, createDeletionMarks } from '../../../host/agents/service/records.ts';
import type { AgentStore } from '../../../host/store/agents-port.ts';
import { createMemoryEventLog } from '../../../host/store/memory.ts';
import { createPgAgentStore } from '../../../host/store/pg/agents.ts';
import { openPgDatabase, type PgDatabase } from '../../../host/store/pg/db.ts';
import { openPgStore } from '../../../host/store/pg/index.ts';
import { type PgWakeBus, type PgWakeBusOptions, startPgWakeBus } from '../../../host/store/pg/notify.ts';
import { createPgRequestBackend, createPgRequestStore } from '../../../host/store/pg/requests.ts';
import { createPgTeamStore } from '../../../host/store/pg/teams.ts';
import { createPgTenantStore } from '../../../host/store/pg/tenants.ts';
import { createRequestStore } from '../../../host/store/request-core.ts';
import { createSealer } from '../../../host/store/sealed.ts';
import type { Store } from '../../../host/store/store.ts';
import type { WakeBus, WakeTopic } from '../../../host/store/wake-port.ts';
import { DEFAULT_CHILD_LIMITS } from '../../../host/teams/limits.ts';
import { createMailboxes } from '../../../host/teams/mailboxes.ts';
import { createStoreDatabase, describePostgres, type StoreDatabase } from '../../helpers/postgres.ts';
import { until } from '../../helpers/until.ts';
import { runWakeBusContract } from './wake-bus.contract.ts';

const HOUR = 3_600_000;
const never = new AbortController().signal;

/** The next wake-up of `topic` this bus hears (the subscriber added last hears it last). */
const heard = (bus: WakeBus, topic: WakeTopic): Promise<string> =>
  new Promise((resolve) => {
    const off = bus.subscribe(topic, (id) => {
      off();
      resolve(id);
    });
  });

const resynced = (bus: WakeBus): Promise<void> =>
  new Promise((resolve) => {
    const off = bus.onResync(() => {
      off();
      resolve();
    });
  });

describePostgres('WakeBus (postgres)', () => {
  let database: StoreDatabase;
  beforeAll(async () => {
    database = await createStoreDatabase();
  });
  afterAll(() => database?.drop());
  runWakeBusContract('postgres', async (onError) => {
    const db = database.open();
    const bus = await startPgWakeBus(db, { onError });
    return {
      bus,
      async close() {
        await bus.close();
        await db.close();
      },
    };
  });
});

describePostgres('the wake-up bus between processes (postgres)', () => {
  let database: StoreDatabase;
  const cleanups: Array<() => unknown> = [];
  const errors: unknown[] = [];

  /** One process: its own pool (named, so its LISTEN connection can be found) and bus. */
  const processNamed = async (
    name: string,
    options: PgWakeBusOptions = {},
  ): Promise<{ db: PgDatabase; bus: PgWakeBus }> => {
    const db = openPgDatabase({ url: database.url, poolSize: 3, applicationName: name });
    const bus = await startPgWakeBus(db, { onError: (e) => errors.push(e), backoffMs: 20, ...options });
    // Run in reverse: the bus stops listening, then the pool ends.
    cleanups.push(
      () => db.close(),
      () => bus.close(),
    );
    return { db, bus };
  };

  /** The server process of the LISTEN connection of the process named `name`, from a third connection. */
  const listenerPid = async (name: string): Promise<number> => {
    const admin = database.open({ poolSize: 1 });
    const { rows } = await admin.query<{ pid: number }>(
      // Named apart from the pool's connections (pg/notify.ts); its last query may be a heartbeat.
      'SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = $2',
      [database.name, `${name} wake-ups`],
    );
    expect(rows).toHaveLength(1);
    return rows[0]?.pid as number;
  };

  /** Terminates the LISTEN connection of the process named `name` from a third connection. */
  const killListener = async (name: string): Promise<void> => {
    const pid = await listenerPid(name);
    await database.open({ poolSize: 1 }).query('SELECT pg_terminate_backend($1)', [pid]);
  };

  /** A process's deletion over `agents`, with its live agents and batches as records of what they were told. */
  const deletionOn = (
    agents: AgentStore,
    bus: WakeBus | undefined,
    forget: (id: string) => void = () => undefined,
    running: string[] = [],
  ) => {
    const stopped: string[] = [];
    const deletion = createDeletion({
      agents,
      forget,
      ...(bus === undefined ? {} : { wake: bus }),
      requests: { list: async () => [], cancel: async () => false } as never,
      provider: { destroy: async () => undefined } as never,
      marks: createDeletionMarks(agents),
      live: { retire: (agentId: string) => stopped.push(`retire ${agentId}`) } as never,
      batches: {
        abortAgent: async (agentId: string) => void stopped.push(`abort ${agentId}`),
        agents: () => running,
      } as never,
      sandboxes: { release: async () => undefined } as never,
      graceMs: 10,
      reapRetryMs: HOUR,
      isClosing: () => false,
    });
    cleanups.push(() => deletion.stopRetrying());
    return { deletion, stopped };
  };

  beforeEach(async () => {
    database = await createStoreDatabase();
    errors.length = 0;
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await database.drop();
  });

  it('carries a wake-up to the other process once, and to its own subscribers once, at publish', async () => {
    const a = await processNamed('proc-a');
    const b = await processNamed('proc-b');
    const onA: string[] = [];
    const onB: string[] = [];
    a.bus.subscribe('mail', (id) => onA.push(id));
    b.bus.subscribe('mail', (id) => onB.push(id));
    const arrived = heard(a.bus, 'mail');
    const sent = b.bus.publish('mail', 'agt_1');
    expect(onB).toEqual(['agt_1']); // synchronously, before the NOTIFY is even sent
    await sent;
    expect(await arrived).toBe('agt_1');
    // A marker after it: once A hears it, B's own notification would have come back to B too.
    const marker = heard(b.bus, 'config');
    await a.bus.publish('config', 'ten_x');
    await marker;
    expect(onA).toEqual(['agt_1']);
    expect(onB).toEqual(['agt_1']);
    expect(a.bus.listening() && b.bus.listening()).toBe(true);
  });

  it('wakes a waiter on A when B answers its request, with the poll an hour away', async () => {
    const a = await processNamed('proc-a');
    const b = await processNamed('proc-b');
    let reads = 0;
    const backend = createPgRequestBackend(a.db);
    const storeA = createRequestStore(
      {
        ...backend,
        get: async (id) => {
          const request = await backend.get(id);
          reads++;
          return request;
        },
      },
      { wake: a.bus, pollMs: HOUR, backstopPollMs: HOUR },
    );
    const storeB = createPgRequestStore(b.db, { wake: b.bus });
    cleanups.push(
      () => storeA.close(),
      () => storeB.close(),
    );
    const request = await storeA.create({
      sessionId: 'agt_s',
      kind: 'approval',
      callId: 'call_1',
      payload: { q: 1 },
      expiresAt: Date.now() + HOUR,
    });
    const before = reads;
    const waited = storeA.wait(request.id, never);
    await until(() => reads > before, { what: "the wait's first read" }); // it found the request pending
    expect(await storeB.answer(request.id, { ok: true })).toBe(true);
    expect(await waited).toMatchObject({ id: request.id, state: 'answered', answer: { ok: true } });
  });

  it("wakes a mailbox wait on A when B posts to it, with the wait's timeout an hour away", async () => {
    const a = await processNamed('proc-a');
    const b = await processNamed('proc-b');
    const teamsA = createPgTeamStore(a.db, Date.now, a.bus);
    let reads = 0;
    const countedA = {
      ...teamsA,
      undelivered: async (agentId: string) => {
        const items = await teamsA.undelivered(agentId);
        reads++;
        return items;
      },
    };
    const limitsOf = () => DEFAULT_CHILD_LIMITS;
    const mailA = createMailboxes({ teams: countedA, events: createMemoryEventLog(), limitsOf, wake: a.bus });
    const mailB = createMailboxes({
      teams: createPgTeamStore(b.db, Date.now, b.bus), // announces the post inside its transaction
      events: createMemoryEventLog(),
      limitsOf,
      wake: b.bus,
    });
    cleanups.push(
      () => mailA.close(),
      () => mailB.close(),
    );
    const waited = mailA.wait('agt_to', HOUR, never);
    await until(() => reads > 0, { what: "the wait's first read" }); // an empty mailbox: it sleeps
    await mailB.post({ tenantId: 't', agentId: 'agt_to', fromId: 'agt_from', kind: 'message', body: 'hi' });
    expect((await waited).map((m) => m.body)).toEqual(['hi']);
  });

  it('refuses on A a key revoked through B at once, with A trusting verified keys for an hour', async () => {
    const a = await processNamed('proc-a');
    const b = await processNamed('proc-b');
    const tenantsA = createPgTenantStore(a.db, Date.now, { keyCacheMs: HOUR, wake: a.bus });
    const tenantsB = createPgTenantStore(b.db, Date.now, { keyCacheMs: HOUR, wake: b.bus });
    const { id, apiKey, keyId } = await tenantsA.createTenant('acme');
    expect((await tenantsA.verifyKey(apiKey))?.id).toBe(id); // remembered for an hour on A
    const told = heard(a.bus, 'key');
    expect(await tenantsB.revokeKey(keyId)).toBe(true);
    expect(await told).toBe(keyId);
    expect(await tenantsA.verifyKey(apiKey)).toBeUndefined();
  });

  it("forgets on A an agent deleted through B and stops A's work for it", async () => {
    const a = await processNamed('proc-a');
    const b = await processNamed('proc-b');
    const sealer = createSealer(Buffer.alloc(32, 7));
    const frozen = () => 1_700_000_000_000; // A's lookup never expires an entry by itself
    const agentsA = createPgAgentStore(a.db, frozen, sealer);
    const agentsB = createPgAgentStore(b.db, Date.now, sealer);
    const { id: tenantId } = await createPgTenantStore(a.db).createTenant('acme');
    const record = await agentsA.create({ tenantId, preset: 'standard', mode: 'direct', config: {} });
    const marksA = createDeletionMarks(agentsA);
    const lookupA = createAgentLookup(agentsA, marksA, { now: frozen, ttlMs: HOUR });
    const onA = deletionOn(agentsA, a.bus, lookupA.forget);
    const onB = deletionOn(agentsB, b.bus);
    const agent = await lookupA.get(tenantId, record.id); // remembered on A, for an hour
    let toldA = false;
    onA.deletion.onDeleted(agent, () => {
      toldA = true;
    });
    const told = heard(a.bus, 'agent');
    await onB.deletion.delete(tenantId, record.id);
    expect(await told).toBe(record.id);
    await expect(lookupA.get(tenantId, record.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(onA.stopped).toEqual([`retire ${record.id}`, `abort ${record.id}`]);
    expect(toldA).toBe(true);
  });

  it('stops, at the resync, the batches of an agent whose deletion no wake-up announced', async () => {
    const a = await processNamed('proc-a');
    const sealer = createSealer(Buffer.alloc(32, 7));
    const agents = createPgAgentStore(a.db, Date.now, sealer);
    const { id: tenantId } = await createPgTenantStore(a.db).createTenant('acme');
    const gone = await agents.create({ tenantId, preset: 'standard', mode: 'direct', config: {} });
    const kept = await agents.create({ tenantId, preset: 'standard', mode: 'direct', config: {} });
    const onA = deletionOn(agents, a.bus, undefined, [gone.id, kept.id]);
    // Deleted by a process without a bus: what A sees of a wake-up lost while its listener was down.
    await deletionOn(createPgAgentStore(database.open(), Date.now, sealer), undefined).deletion.delete(
      tenantId,
      gone.id,
    );
    await killListener('proc-a');
    await until(() => onA.stopped.length === 2, { what: 'the deleted agent stopped' });
    expect(onA.stopped).toEqual([`retire ${gone.id}`, `abort ${gone.id}`]);
  });

  it('reconnects after its LISTEN connection is terminated, resyncs, and hears wake-ups again', async () => {
    const a = await processNamed('proc-a');
    const b = await processNamed('proc-b');
    const back = resynced(a.bus);
    await killListener('proc-a');
    await back;
    expect(a.bus.listening()).toBe(true);
    expect(errors.some((e) => String(e).includes('reconnecting'))).toBe(true);
    const arrived = heard(a.bus, 'request');
    await b.bus.publish('request', 'req_after');
    expect(await arrived).toBe('req_after');
  });

  it('counts a listening connection that stops answering as lost, and listens again', async () => {
    const a = await processNamed('proc-a', { heartbeatMs: 50, heartbeatTimeoutMs: 500 });
    const b = await processNamed('proc-b');
    const pid = await listenerPid('proc-a');
    // Its server process stops (a hung server, or a network that drops packets): the socket stays open.
    process.kill(pid, 'SIGSTOP');
    try {
      await resynced(a.bus);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    expect(errors.some((e) => String(e).includes('heartbeat'))).toBe(true);
    const arrived = heard(a.bus, 'mail');
    await b.bus.publish('mail', 'agt_2');
    expect(await arrived).toBe('agt_2');
  });

  it('picks up, at the resync, an answer no wake-up announced', async () => {
    const a = await processNamed('proc-a');
    let reads = 0;
    const backend = createPgRequestBackend(a.db);
    const storeA = createRequestStore(
      {
        ...backend,
        get: async (id) => {
          const request = await backend.get(id);
          reads++;
          return request;
        },
      },
      { wake: a.bus, pollMs: HOUR, backstopPollMs: HOUR },
    );
    // B answers without a bus: what a process sees of a wake-up lost while its listener was down.
    const storeB = createPgRequestStore(database.open());
    cleanups.push(
      () => storeA.close(),
      () => storeB.close(),
    );
    const request = await storeA.create({
      sessionId: 'agt_s',
      kind: 'approval',
      callId: 'call_1',
      payload: {},
      expiresAt: Date.now() + HOUR,
    });
    const before = reads;
    const waited = storeA.wait(request.id, never);
    await until(() => reads > before, { what: "the wait's first read" });
    expect(await storeB.answer(request.id, 'yes')).toBe(true);
    await killListener('proc-a');
    expect(await waited).toMatchObject({ state: 'answered', answer: 'yes' });
  });

  it('serves two full stores on one database (two replicas) that hear each other', async () => {
    const frozen = () => 1_700_000_000_000; // verified keys never expire from A's cache by themselves
    const open = (): Promise<Store> =>
      openPgStore({ url: database.url, secretsKey: Buffer.alloc(32, 1), now: frozen });
    const storeA = await open();
    cleanups.push(() => storeA.close());
    const storeB = await open();
    cleanups.push(() => storeB.close());
    const { apiKey, keyId } = await storeA.tenants.createTenant('acme');
    expect(await storeA.tenants.verifyKey(apiKey)).toBeDefined();
    const told = heard(storeA.wake, 'key');
    await storeB.tenants.revokeKey(keyId);
    await told;
    expect(await storeA.tenants.verifyKey(apiKey)).toBeUndefined();
  });
});
