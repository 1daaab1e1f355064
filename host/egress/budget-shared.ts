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

/** What the shared budgets' functions share: the store, the clock, the accounts, the replicas' share. */
interface SharedState {
  usage: SharedBudgetsOptions['usage'];
  now: () => number;
  minChunk: number;
  accounts: Map<string, Account>;
  share: ReplicaShare;
}

const chunkOf = (s: SharedState, limit: number): number =>
  Math.min(limit, Math.max(s.minChunk, Math.ceil(limit / 16)));

function accountOf(s: SharedState, tenantId: string): Account {
  const window = Math.floor(s.now() / HOUR_MS);
  let account = s.accounts.get(tenantId);
  if (account === undefined) {
    account = { window, granted: 0, spent: 0, exhausted: false, refill: undefined, open: 0 };
    s.accounts.set(tenantId, account);
  } else if (account.window !== window) {
    Object.assign(account, { window, granted: 0, spent: 0, exhausted: false, refill: undefined });
  }
  return account;
}

/**
 * Leases `bytes` more for the account's window; one lease in flight per account, which every
 * caller waiting on it shares. Rejects (STORE_FAILED) when the database could not be asked.
 */
function refill(
  s: SharedState,
  tenantId: string,
  account: Account,
  bytes: number,
  limit: number,
): Promise<void> {
  if (account.refill !== undefined) return account.refill;
  const window = account.window;
  const pending: Promise<void> = s.usage
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
function topUp(s: SharedState, tenantId: string, account: Account, limit: number): void {
  const chunk = chunkOf(s, limit);
  if (account.exhausted || account.refill !== undefined || account.granted - account.spent >= chunk / 2)
    return;
  // A failed lease is asked again by the next take or open; meanwhile nothing more is spent.
  refill(s, tenantId, account, Math.max(chunk, account.spent - account.granted + chunk), limit).catch(
    () => undefined,
  );
}

/** Spends `bytes` once the leases cover them (leasing more as needed); false when they cannot. */
async function takeLater(s: SharedState, tenantId: string, bytes: number, limit: number): Promise<boolean> {
  const chunk = chunkOf(s, limit);
  for (;;) {
    const current = accountOf(s, tenantId);
    if (current.spent + bytes <= current.granted) {
      current.spent += bytes;
      topUp(s, tenantId, current, limit);
      return true;
    }
    if (current.exhausted) return false;
    try {
      await refill(s, tenantId, current, Math.max(chunk, current.spent + bytes - current.granted), limit);
    } catch {
      return false; // the budget could not be read: refused, nothing sent
    }
  }
}

/** One admitted connection's lease on its tenant's account. */
function leaseOf(s: SharedState, tenantId: string, limit: number): BudgetLease {
  const chunk = chunkOf(s, limit);
  let closed = false;
  return {
    charge(bytes) {
      const current = accountOf(s, tenantId);
      current.spent += bytes;
      topUp(s, tenantId, current, limit);
      if (current.spent <= current.granted) return true;
      // Past the leases: the next chunk is being leased; beyond one chunk of credit, or with the
      // window used up, the connection is cut.
      return !current.exhausted && current.spent <= current.granted + chunk;
    },
    take(bytes) {
      const current = accountOf(s, tenantId);
      if (current.spent + bytes <= current.granted) {
        current.spent += bytes;
        topUp(s, tenantId, current, limit);
        return true;
      }
      return current.exhausted ? false : takeLater(s, tenantId, bytes, limit);
    },
    close() {
      if (closed) return;
      closed = true;
      accountOf(s, tenantId).open--;
    },
  };
}

async function open(s: SharedState, tenantId: string, budget: EgressBudget): Promise<BudgetLease> {
  const limit = budget.bytesPerHour;
  const chunk = chunkOf(s, limit);
  let account = accountOf(s, tenantId);
  if (!account.exhausted && account.granted - account.spent < chunk / 2)
    await refill(s, tenantId, account, Math.max(chunk, account.spent - account.granted + chunk), limit);
  await s.share.ready;
  account = accountOf(s, tenantId);
  if (account.open >= s.share.of(budget.connections))
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
  return leaseOf(s, tenantId, limit);
}

export function createSharedBudgets(options: SharedBudgetsOptions): Budgets {
  const now = options.now ?? Date.now;
  const s: SharedState = {
    usage: options.usage,
    now,
    minChunk: options.minChunk ?? 65_536,
    accounts: new Map(),
    share:
      options.share ??
      createReplicaShare({
        limits: options.usage,
        liveWithinMs: options.liveWithinMs,
        ...(options.refreshMs === undefined ? {} : { refreshMs: options.refreshMs }),
        now,
      }),
  };
  return {
    open: (tenantId, budget) => open(s, tenantId, budget),
    usage(tenantId) {
      const account = accountOf(s, tenantId);
      return { bytes: account.spent, connections: account.open };
    },
  };
}
