// Per-tenant egress budgets, held in this process (the embedded store's one process is the whole
// tenant; replicas on PostgreSQL share theirs: ./budget-shared.ts): connections open at once, and
// bytes (both directions) per hour, counted in fixed one-hour windows. A connection takes a lease when it
// opens and gives it back when it closes; its bytes are charged as they pass, never after: bytes
// about to leave are taken before they are sent (`take`: what does not fit is not sent, and the
// connection is cut), bytes that arrived are charged as they arrive (`charge`: past the budget the
// connection is cut, at most the chunk in hand over). Invariants: `open` counts only leases not
// closed (close is idempotent), so a budget never leaks on an error path; a refused `take` charges
// nothing, so bytes never sent never count.
import { SandboxError } from '../errors.ts';

export interface EgressBudget {
  /** Connections (or HTTP requests) of one tenant open at once. */
  connections: number;
  /** Bytes sent and received by one tenant per hour. */
  bytesPerHour: number;
}

export interface BudgetLease {
  /** Charges bytes that arrived; false when the tenant's hourly budget is now used up (cut the connection). */
  charge(bytes: number): boolean;
  /**
   * Charges bytes about to be sent when they fit in what is left of the hour's budget; false, and
   * nothing charged, when they do not (do not send them: cut the connection or refuse the request).
   * A promise when the answer needs the central counter (./budget-shared.ts: the chunk in hand is
   * spent); the in-process counter always answers at once.
   */
  take(bytes: number): boolean | Promise<boolean>;
  close(): void;
}

export interface Budgets {
  /** A lease for one connection; EGRESS_BUDGET_EXCEEDED when the tenant is at either limit. */
  open(tenantId: string, budget: EgressBudget): BudgetLease | Promise<BudgetLease>;
  /** Bytes charged in the current window and connections open, for one tenant. */
  usage(tenantId: string): { bytes: number; connections: number };
}

const HOUR_MS = 3_600_000;

interface Account {
  windowStart: number;
  bytes: number;
  open: number;
}

export function createBudgets(now: () => number = Date.now): Budgets {
  const accounts = new Map<string, Account>();

  function accountOf(tenantId: string): Account {
    let account = accounts.get(tenantId);
    const t = now();
    if (account === undefined) {
      account = { windowStart: t, bytes: 0, open: 0 };
      accounts.set(tenantId, account);
    } else if (t - account.windowStart >= HOUR_MS) {
      account.windowStart = t;
      account.bytes = 0;
    }
    return account;
  }

  function open(tenantId: string, budget: EgressBudget): BudgetLease {
    const account = accountOf(tenantId);
    if (account.open >= budget.connections)
      throw new SandboxError(
        'EGRESS_BUDGET_EXCEEDED',
        `This tenant has ${account.open} egress connections open, its most; try again when one has finished.`,
        { data: { reason: 'connections' } },
      );
    if (account.bytes >= budget.bytesPerHour)
      throw new SandboxError(
        'EGRESS_BUDGET_EXCEEDED',
        `This tenant used its egress budget of ${budget.bytesPerHour} bytes this hour; try again later.`,
        { data: { reason: 'bytes' } },
      );
    account.open++;
    let closed = false;
    return {
      charge(bytes) {
        const current = accountOf(tenantId);
        current.bytes += bytes;
        return current.bytes <= budget.bytesPerHour;
      },
      take(bytes) {
        const current = accountOf(tenantId);
        if (current.bytes + bytes > budget.bytesPerHour) return false;
        current.bytes += bytes;
        return true;
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
      return { bytes: account.bytes, connections: account.open };
    },
  };
}
