// Per-tenant egress budgets across replicas (host/egress/budget-shared.ts over
// host/store/pg/limits.ts), on the run's private PostgreSQL cluster: two replicas are two
// stores (two pools) on one database, as two processes would be. What a tenant's operator relies
// on: under one hourly budget X, both replicas together move at most X plus one chunk each, and
// each refuses the tenant (EGRESS_BUDGET_EXCEEDED) once it is used up, whichever replica the
// traffic went through; the connections open at once hold across both (a share each); another
// tenant's budget is its own.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEgressGateway } from '../../../host/egress/gateway.ts';
import { type Budgets, createSharedBudgets, type EgressBudget } from '../../../host/egress/index.ts';
import { createMemoryEventLog } from '../../../host/store/index.ts';
import { openPgStore } from '../../../host/store/pg/index.ts';
import type { Store } from '../../../host/store/store.ts';
import { createDatabase, describePostgres, type TestDatabase } from '../../helpers/postgres.ts';

const KEY = Buffer.alloc(32, 7);
const CHUNK = 4_096;

describePostgres('egress budgets across replicas on one PostgreSQL database', () => {
  let database: TestDatabase;
  const stores: Store[] = [];

  /** Replicas on the database, each registered (live) before any of them counts the others. */
  const replicas = async (...ids: string[]): Promise<Budgets[]> => {
    const opened: Store[] = [];
    for (const id of ids) {
      const store = await openPgStore({ url: database.url, secretsKey: KEY, eventBatchWindowMs: 0 });
      stores.push(store);
      opened.push(store);
      await store.leases?.register({ id, url: `http://127.0.0.1:1/${id}` });
    }
    return opened.map((store) =>
      createSharedBudgets({ usage: store.limits!, liveWithinMs: 60_000, minChunk: CHUNK }),
    );
  };

  beforeEach(async () => {
    database = await createDatabase();
  });
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close().catch(() => undefined);
    await database.drop();
  });

  /** Sends `size`-byte pieces through `budgets` until it refuses; the bytes it let through. */
  const spendAll = async (budgets: Budgets, tenant: string, budget: EgressBudget, size: number) => {
    let moved = 0;
    for (;;) {
      let lease: Awaited<ReturnType<Budgets['open']>>;
      try {
        lease = await budgets.open(tenant, budget);
      } catch (error) {
        expect(error).toMatchObject({ code: 'EGRESS_BUDGET_EXCEEDED', data: { reason: 'bytes' } });
        return moved;
      }
      try {
        // Half the bytes leave (taken before they are sent), half arrive (charged as they come).
        if (!(await lease.take(size))) return moved;
        moved += size;
        if (!lease.charge(size)) return moved + size;
        moved += size;
      } finally {
        lease.close();
      }
    }
  };

  it('holds one budget for the tenant across both: at most X plus one chunk each, then refused on both', async () => {
    const [a, b] = (await replicas('a', 'b')) as [Budgets, Budgets];
    const budget = { connections: 8, bytesPerHour: 100_000 };
    const [movedA, movedB] = await Promise.all([
      spendAll(a, 't1', budget, 1_000),
      spendAll(b, 't1', budget, 1_000),
    ]);
    expect(movedA + movedB).toBeLessThanOrEqual(budget.bytesPerHour + 2 * CHUNK);
    // Neither stopped early by more than the chunk the other may hold unspent.
    expect(movedA + movedB).toBeGreaterThanOrEqual(budget.bytesPerHour - 2 * CHUNK);
    // (How it splits between the two is not promised: whichever spends faster leases more.)
    // Used up on both: what is left of the hour, less than a piece, takes no piece on either
    // replica, and once those last bytes are spent a new connection is refused.
    for (const r of [a, b]) {
      const last = await Promise.resolve()
        .then(() => r.open('t1', budget))
        .catch(() => undefined);
      if (last !== undefined) {
        expect(await last.take(1_000)).toBe(false);
        last.charge(1_000);
        last.close();
      }
      await expect(Promise.resolve().then(() => r.open('t1', budget))).rejects.toMatchObject({
        code: 'EGRESS_BUDGET_EXCEEDED',
      });
    }
    // Another tenant's budget is its own.
    const other = await a.open('t2', budget);
    expect(await other.take(1_000)).toBe(true);
    other.close();
  });

  it('a replica that leased first does not starve the other: what is left goes to whoever asks', async () => {
    const [a, b] = (await replicas('a', 'b')) as [Budgets, Budgets];
    const budget = { connections: 8, bytesPerHour: 20_000 };
    const movedA = await spendAll(a, 't1', budget, 500);
    expect(movedA).toBeGreaterThanOrEqual(budget.bytesPerHour - CHUNK);
    const movedB = await spendAll(b, 't1', budget, 500);
    expect(movedA + movedB).toBeLessThanOrEqual(budget.bytesPerHour + 2 * CHUNK);
  });

  it('a take bigger than the chunk in hand asks the counter and is refused whole when it does not fit', async () => {
    const [a] = (await replicas('a')) as [Budgets];
    const budget = { connections: 8, bytesPerHour: 50_000 };
    const lease = await a.open('t1', budget);
    expect(await lease.take(30_000)).toBe(true);
    expect(await lease.take(30_000)).toBe(false);
    expect(a.usage('t1').bytes).toBe(30_000);
    expect(await lease.take(20_000)).toBe(true);
    lease.close();
  });

  it('two gateways fetching for one tenant through both replicas get at most X plus a chunk each, then EGRESS_BUDGET_EXCEEDED', async () => {
    const [a, b] = (await replicas('a', 'b')) as [Budgets, Budgets];
    const X = 1024 * 1024; // its chunk: 64 KiB
    const piece = Buffer.alloc(16 * 1024, 'x');
    const http: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      for (let i = 0; i < 6; i++) res.write(piece); // 96 KiB a response
      res.end();
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()));
    const port = (http.address() as AddressInfo).port;
    try {
      const gateway = (budgets: Budgets) =>
        createEgressGateway({
          settingsOf: async () => ({
            allow: [{ host: '127.0.0.1', ports: [port] }],
            credentials: [],
            budget: { bytesPerHour: X },
          }),
          agentRulesOf: async () => undefined,
          events: createMemoryEventLog(),
          maxBudget: { connections: 8, bytesPerHour: 1024 * X },
          testHosts: [{ ip: '127.0.0.1' }],
          budgets,
        });
      const caller = { tenantId: 't1', agentId: 'a1', sessionId: 'a1', via: 'web_fetch' as const };
      /** Fetches until the budget refuses; the body bytes that arrived. */
      const fetchAll = async (g: ReturnType<typeof gateway>) => {
        let got = 0;
        for (;;) {
          try {
            const response = await g.fetch(caller, `http://127.0.0.1:${port}/`);
            const reader = response.body!.getReader();
            for (let r = await reader.read(); !r.done; r = await reader.read()) got += r.value.length;
          } catch (error) {
            expect(error).toMatchObject({ code: 'EGRESS_BUDGET_EXCEEDED' });
            return got;
          }
        }
      };
      const [gotA, gotB] = await Promise.all([fetchAll(gateway(a)), fetchAll(gateway(b))]);
      // Heads count too, so the bodies alone stay under the bound.
      expect(gotA + gotB).toBeLessThanOrEqual(X + 2 * 64 * 1024);
      expect(gotA + gotB).toBeGreaterThan(X / 2);
    } finally {
      http.closeAllConnections();
      http.close();
    }
  });

  describe('connections open at once', () => {
    it('hold across both replicas: a share of the limit each, at most limit + N - 1 together', async () => {
      const [a, b] = (await replicas('a', 'b')) as [Budgets, Budgets];
      const budget = { connections: 4, bytesPerHour: 1_000_000 };
      const open = async (r: Budgets) => {
        const leases = [];
        for (;;) {
          try {
            leases.push(await r.open('t1', budget));
          } catch (error) {
            expect(error).toMatchObject({ code: 'EGRESS_BUDGET_EXCEEDED', data: { reason: 'connections' } });
            return leases;
          }
        }
      };
      const onA = await open(a);
      const onB = await open(b);
      expect(onA).toHaveLength(2);
      expect(onB).toHaveLength(2);
      // One closed on A frees a place on A.
      onA[0]?.close();
      expect((await open(a)).length).toBe(1);
    });

    it('an odd limit over two replicas admits at most limit + 1 together', async () => {
      const [a, b] = (await replicas('a', 'b')) as [Budgets, Budgets];
      const budget = { connections: 3, bytesPerHour: 1_000_000 };
      let admitted = 0;
      for (const r of [a, b, a, b, a, b])
        await Promise.resolve(r.open('t1', budget)).then(
          () => admitted++,
          () => undefined,
        );
      expect(admitted).toBe(4);
    });
  });
});
