// The durable log's retention, run in the background (issue 34): each pass reads which tenants
// hold log bytes, turns each one's settings (`log` of GET/PUT /v1/settings) and the operator's
// maximum (DSH_LOG_RETENTION_MAX_DAYS) into a rule (store/log-retention-port.ts RetentionRule),
// and removes what the rule lets go in bounded slices (LogRetentionStore.sweepSlice: one
// transaction, at most `sliceRows` events of one session), yielding to the event loop between
// slices; then gives the freed space back in bounded steps (compact). Each slice's freed bytes are
// taken off the event log's own count at once, so a tenant refused for its budget is admitted again.
// Invariants: one pass at a time (a pass still running when the timer fires is not doubled); a
// failed slice ends that tenant's turn in this pass (the next pass tries again), never the pass;
// close() stops after the slice in flight. What a slice removes is a prefix of one session's log
// (the store's rule), so a session's remaining events stay gap-free from its first kept seq.
import type { TenantSettings } from '../agents/tenant-settings.ts';
import type { LogRetentionStore, RetentionRule, SweptSlice } from '../store/log-retention-port.ts';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

export interface LogRetentionOptions {
  store: LogRetentionStore;
  /** Each tenant's settings, defaults filled in (the agent service's reader). */
  settings: { get(tenantId: string): Promise<Pick<TenantSettings, 'log'>> };
  /** The event log: queued appends are written first; freed bytes are released from its count. */
  events: { flush(): Promise<void>; release(tenantId: string, bytes: number): void };
  /** The operator's maximum age in days (0: none). */
  maxDays: number;
  /** Events removed per slice (one transaction). Default 500. */
  sliceRows?: number;
  /** Free pages given back per compact step. Default 512 (2 MiB of 4 KiB pages); 0: none are. */
  compactPages?: number;
  now?: () => number;
  /** Told after each slice that removed something, with how long it took (ms). */
  onSlice?: (tenantId: string, slice: SweptSlice, ms: number) => void;
  onError?: (tenantId: string, error: unknown) => void;
}

/** What one pass did. */
export interface RetentionPass {
  tenants: number;
  events: number;
  bytes: number;
  payloads: number;
  slices: number;
  /** Free pages given back to the file system (libsql). */
  pages: number;
}

export interface LogRetention {
  /** One pass over every tenant now (waits for a pass already running, then runs its own). */
  run(): Promise<RetentionPass>;
  /** A pass after `firstMs`, then every `everyMs`, until close(). */
  start(everyMs: number, firstMs?: number): void;
  /** Stops the timer and the pass in flight after its current slice. */
  close(): Promise<void>;
}

/** The rule of one tenant now: its own limits under the operator's maximum. */
export function ruleOf(log: TenantSettings['log'], maxDays: number, now: number): RetentionRule {
  const days = [log.retentionDays, maxDays].filter((d) => d > 0);
  const rule: RetentionRule = { deletedBefore: now - log.deletedAgentHours * HOUR_MS };
  if (days.length > 0) rule.before = now - Math.min(...days) * DAY_MS;
  if (log.retentionBytes > 0) rule.maxBytes = log.retentionBytes;
  return rule;
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

export function createLogRetention(options: LogRetentionOptions): LogRetention {
  const { store, settings, events } = options;
  const now = options.now ?? Date.now;
  const sliceRows = options.sliceRows ?? 500;
  const compactPages = options.compactPages ?? 512;
  let running: Promise<RetentionPass> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  async function sweepTenant(tenantId: string, pass: RetentionPass): Promise<void> {
    const rule = ruleOf((await settings.get(tenantId)).log, options.maxDays, now());
    let swept = false;
    while (!closed) {
      const started = performance.now();
      const slice = await store.sweepSlice(tenantId, rule, sliceRows);
      if (slice.events === 0) break;
      swept = true;
      events.release(tenantId, slice.bytes);
      pass.events += slice.events;
      pass.bytes += slice.bytes;
      pass.payloads += slice.payloads;
      pass.slices++;
      options.onSlice?.(tenantId, slice, performance.now() - started);
      await tick(); // what waits on the event loop runs between slices
    }
    if (swept) pass.tenants++;
  }

  async function pass(): Promise<RetentionPass> {
    const done: RetentionPass = { tenants: 0, events: 0, bytes: 0, payloads: 0, slices: 0, pages: 0 };
    await events.flush();
    for (const { tenantId } of await store.tenants()) {
      if (closed) break;
      await sweepTenant(tenantId, done).catch((error: unknown) => options.onError?.(tenantId, error));
    }
    while (!closed && done.events > 0 && compactPages > 0) {
      const { freed, left } = await store.compact(compactPages);
      done.pages += freed;
      if (freed === 0 || left === 0) break;
      await tick();
    }
    return done;
  }

  async function run(): Promise<RetentionPass> {
    while (running !== undefined) await running.catch(() => undefined);
    running = pass().finally(() => {
      running = undefined;
    });
    return running;
  }

  function schedule(ms: number, everyMs: number): void {
    if (closed) return;
    timer = setTimeout(() => {
      const next = () => schedule(everyMs, everyMs);
      if (running !== undefined) next();
      else
        run().then(next, (error: unknown) => {
          options.onError?.('', error);
          next();
        });
    }, ms);
    timer.unref();
  }

  return {
    run,
    start: (everyMs, firstMs = Math.min(everyMs, 60_000)) => schedule(firstMs, everyMs),
    async close() {
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      await running?.catch(() => undefined);
    },
  };
}
