// Per-tenant egress budgets held for the tenant as a whole when replicas share a PostgreSQL
// database (the Budgets of ./budget.ts, over the store's central counters: LimitStore).
// Bytes: the tenant's hour window (clock hours) is a row in the database; this replica leases a
// chunk of it at a time (a sixteenth of the budget, at least `minChunk`) with one conditional
// statement, spends it here synchronously as bytes pass, and leases the next chunk in the
// background when half of the one in hand is spent, so a byte costs no round trip (amortised, one
// lease per chunk). Connections: each replica admits its share of the tenant's limit,
// ceil(limit / live replicas), the live count read from the replicas' heartbeats
// (store/replica-share.ts).
// Guarantees, with N live replicas: the leases of a window never pass the budget, bytes taken
// before sending never pass this replica's leases, and bytes that arrived run at most one chunk
// past them (the next one is being leased; past that the connection is cut), so the tenant moves
// at most budget + N chunks an hour; a replica may be refused while others hold up to a chunk each
// unspent. Connections open at once: at most N * ceil(limit / N) <= limit + N - 1 while N holds
// (a replica that joins is counted by the others within `refreshMs`).
// Invariants: `open` counts only leases not closed (close is idempotent); a refused `take` charges
// nothing; a failed lease (database down) refuses rather than admits: EGRESS_BUDGET_EXCEEDED is
// never skipped because the count could not be read.
import { SandboxError } from '../errors.ts';
import type { LimitStore } from '../store/limits-port.ts';
import { createReplicaShare, type ReplicaShare } from '../store/replica-share.ts';
import type { BudgetLease, Budgets, EgressBudget } from './budget.ts';

export interface SharedBudgetsOptions {
  usage: LimitStore;
  /** A replica is live when its heartbeat is this recent (DSH_REPLICA_LEASE_MS). */
  liveWithinMs: number;
  /** How often the live replicas are counted again. Default 5 s. */
  refreshMs?: number;
  /** The live replicas' count, shared with the other per-replica limits. Default: its own. */
  share?: ReplicaShare;
  /** The smallest chunk leased, in bytes (capped at the budget). Default 64 KiB. */
  minChunk?: number;
  now?: () => number;
}

const HOUR_MS = 3_600_000;

interface Account {
  window: number;
  /** Bytes this replica leased in this window. */
  granted: number;
  /** Bytes this replica spent in this window. */
  spent: number;
  /** The window had less left than the last lease asked: no more leases this window. */
  exhausted: boolean;
  refill: Promise<void> | undefined;
  open: number;
}

const refused = (message: string, reason: 'bytes' | 'connections'): SandboxError =>
  new SandboxError('EGRESS_BUDGET_EXCEEDED', message, { data: { reason } });

export function createSharedBudgets(options: SharedBudgetsOptions): Budgets {
  const { usage } = options;
  const now = options.now ?? Date.now;
  const minChunk = options.minChunk ?? 65_536;
  const accounts = new Map<string, Account>();
  const share =
    options.share ??
    createReplicaShare({
      limits: usage,
      liveWithinMs: options.liveWithinMs,
      ...(options.refreshMs === undefined ? {} : { refreshMs: options.refreshMs }),
      now,
    });

  const chunkOf = (limit: number): number => Math.min(limit, Math.max(minChunk, Math.ceil(limit / 16)));

  function accountOf(tenantId: string): Account {
    const window = Math.floor(now() / HOUR_MS);
    let account = accounts.get(tenantId);
    if (account === undefined) {
      account = { window, granted: 0, spent: 0, exhausted: false, refill: undefined, open: 0 };
      accounts.set(tenantId, account);
    } else if (account.window !== window) {
      Object.assign(account, { window, granted: 0, spent: 0, exhausted: false, refill: undefined });
    }
    return account;
  }

  /**
   * Leases `bytes` more for the account's window; one lease in flight per account, which every
   * caller waiting on it shares. Rejects (STORE_FAILED) when the database could not be asked.
   */
  function refill(tenantId: string, account: Account, bytes: number, limit: number): Promise<void> {
    if (account.refill !== undefined) return account.refill;
    const window = account.window;
    const pending: Promise<void> = usage
      .leaseEgressBytes(tenantId, window, bytes, limit)
      .then((got) => {
        if (account.window !== window) return;
        account.granted += got;
        if (got < bytes) account.exhausted = true;
      })
      .finally(() => {
        if (account.refill === pending) account.refill = undefined;
      });
    account.refill = pending;
    return pending;
  }

  /** Leases the next chunk in the background once half of the one in hand is spent. */
  function topUp(tenantId: string, account: Account, limit: number): void {
    const chunk = chunkOf(limit);
    if (account.exhausted || account.refill !== undefined || account.granted - account.spent >= chunk / 2)
      return;
    // A failed lease is asked again by the next take or open; meanwhile nothing more is spent.
    refill(tenantId, account, Math.max(chunk, account.spent - account.granted + chunk), limit).catch(
      () => undefined,
    );
  }

  async function open(tenantId: string, budget: EgressBudget): Promise<BudgetLease> {
    const limit = budget.bytesPerHour;
    const chunk = chunkOf(limit);
    let account = accountOf(tenantId);
    if (!account.exhausted && account.granted - account.spent < chunk / 2)
      await refill(tenantId, account, Math.max(chunk, account.spent - account.granted + chunk), limit);
    await share.ready;
    account = accountOf(tenantId);
    if (account.open >= share.of(budget.connections))
      throw refused(
        `This tenant has ${account.open} egress connections open on this replica, its share of ${budget.connections} over the live replicas; try again when one has finished.`,
        'connections',
      );
    if (account.exhausted && account.spent >= account.granted)
      throw refused(
        `This tenant used its egress budget of ${limit} bytes this hour; try again later.`,
        'bytes',
      );
    account.open++;
    let closed = false;

    async function takeLater(bytes: number): Promise<boolean> {
      for (;;) {
        const current = accountOf(tenantId);
        if (current.spent + bytes <= current.granted) {
          current.spent += bytes;
          topUp(tenantId, current, limit);
          return true;
        }
        if (current.exhausted) return false;
        try {
          await refill(tenantId, current, Math.max(chunk, current.spent + bytes - current.granted), limit);
        } catch {
          return false; // the budget could not be read: refused, nothing sent
        }
      }
    }

    return {
      charge(bytes) {
        const current = accountOf(tenantId);
        current.spent += bytes;
        topUp(tenantId, current, limit);
        if (current.spent <= current.granted) return true;
        // Past the leases: the next chunk is being leased; beyond one chunk of credit, or with the
        // window used up, the connection is cut.
        return !current.exhausted && current.spent <= current.granted + chunk;
      },
      take(bytes) {
        const current = accountOf(tenantId);
        if (current.spent + bytes <= current.granted) {
          current.spent += bytes;
          topUp(tenantId, current, limit);
          return true;
        }
        return current.exhausted ? false : takeLater(bytes);
      },
      close() {
        if (closed) return;
        closed = true;
        accountOf(tenantId).open--;
      },
    };
  }

  return {
    open,
    usage(tenantId) {
      const account = accountOf(tenantId);
      return { bytes: account.spent, connections: account.open };
    },
  };
}
