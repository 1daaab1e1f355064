// The control plane's Prometheus registry, on prom-client (one registry per app, never the global
// one, so that several apps in one process do not share families). What an operator watches:
// the process (CPU, memory, start time, heap, event-loop lag: prom-client's default collectors),
// HTTP requests and their latency by route pattern and status, 429s per tenant, open SSE streams,
// tool calls and their latency, API errors by code, isolate worker restarts, build info, and gauges
// the app's parts read at every scrape (sandboxes, pool, host requests, terminals, disk, the log).
// Invariants: label values are bounded (route patterns, not paths; tool names collapse client
// ones); a gauge whose reader throws reads NaN for that scrape; registering a gauge name again
// replaces the earlier reader (an app made twice over one registry keeps one family). Names follow
// Prometheus' rules (`promtool check metrics`): a counter's ends in `_total`, nothing else's does
// (prom-client's `nodejs_active_*_total` gauges are left out: `nodejs_active_*` says the same by
// type), pinned by tests/unit/api/metrics-names.test.ts.
import {
  Counter,
  collectDefaultMetrics,
  Gauge,
  Histogram,
  type PrometheusContentType,
  Registry,
} from 'prom-client';
import type { TenantLogUsage } from '../store/types.ts';

export interface Metrics {
  /** A settled tool call: tool name, outcome `ok` or the error code, and seconds taken. */
  call(tool: string, outcome: string, seconds: number): void;
  /** An API error response by code. */
  error(code: string): void;
  /**
   * A settled HTTP request: its route pattern (`/v1/agents/:id/calls`, not the path), status and
   * seconds until the response started; a 429 also counts for its tenant.
   */
  http(request: { method: string; route: string; status: number; seconds: number; tenant?: string }): void;
  /** An SSE stream opened (`calls`, `events`); call the returned function once when it ends. */
  stream(kind: string): () => void;
  /** An isolate worker process ended and is replaced (`reason`: exited or killed). */
  workerRestart(reason: string): void;
  /** Registers a gauge read at every scrape (a reader that answers with a promise is awaited). */
  gauge(name: string, help: string, read: () => number | Promise<number>): void;
  /**
   * Registers a counter with one label, read at every scrape from a count kept elsewhere (the
   * store): `{ labelValue: count }`, each count only growing. `name` ends in `_total`.
   */
  labelledCount(
    name: string,
    help: string,
    label: string,
    read: () => Record<string, number> | Promise<Record<string, number>>,
  ): void;
  /** Registers a gauge with one label read at every scrape: `{ labelValue: value }`. */
  labelledGauge(
    name: string,
    help: string,
    label: string,
    read: () => Record<string, number> | Promise<Record<string, number>>,
  ): void;
  render(): Promise<string>;
  readonly contentType: PrometheusContentType;
}

export interface MetricsOptions {
  /** Reported as dsh_build_info{version}. Default 'dev'. */
  version?: string;
  /** prom-client's process and Node.js collectors (CPU, memory, heap, event-loop lag). Default true. */
  process?: boolean;
}

const CALL_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const HTTP_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** The control plane's own instruments, registered on `registers` (and dsh_build_info set). */
function createInstruments(registers: Registry[], options: MetricsOptions) {
  const calls = new Counter({
    name: 'dsh_tool_calls_total',
    help: 'Tool calls settled, by tool and outcome (ok or error code).',
    labelNames: ['tool', 'outcome'],
    registers,
  });
  const callSeconds = new Histogram({
    name: 'dsh_tool_call_seconds',
    help: 'Tool call latency.',
    labelNames: ['tool'],
    buckets: CALL_BUCKETS,
    registers,
  });
  const errors = new Counter({
    name: 'dsh_api_errors_total',
    help: 'API error responses by code.',
    labelNames: ['code'],
    registers,
  });
  const requests = new Counter({
    name: 'dsh_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'],
    registers,
  });
  const requestSeconds = new Histogram({
    name: 'dsh_http_request_seconds',
    help: 'Time until an HTTP response started (for streams: until the stream opened), by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'],
    buckets: HTTP_BUCKETS,
    registers,
  });
  const rateLimited = new Counter({
    name: 'dsh_http_rate_limited_total',
    help: 'Requests answered 429 (tenant request slots or connections), by tenant.',
    labelNames: ['tenant'],
    registers,
  });
  const streams = new Gauge({
    name: 'dsh_sse_streams_open',
    help: 'Server-sent event streams open now, by kind (calls, events).',
    labelNames: ['kind'],
    registers,
  });
  const restarts = new Counter({
    name: 'dsh_isolate_worker_restarts_total',
    help: 'Isolate worker processes that ended and were replaced, by reason (exited, killed).',
    labelNames: ['reason'],
    registers,
  });
  new Gauge({
    name: 'dsh_build_info',
    help: 'The running build: always 1, with its version and Node.js version as labels.',
    labelNames: ['version', 'node'],
    registers,
  }).set({ version: options.version ?? 'dev', node: process.versions.node }, 1);
  return { calls, callSeconds, errors, requests, requestSeconds, rateLimited, streams, restarts };
}

/** prom-client's default gauges named like counters; each has a `nodejs_active_*` twin by type. */
const GAUGES_NAMED_TOTAL = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

/**
 * Fills a labelled family from `read` at a scrape: emptied after the read (an awaited read must
 * not leave the family empty meanwhile), and left empty when the read fails.
 */
async function refill(
  family: { reset(): void },
  read: () => Record<string, number> | Promise<Record<string, number>>,
  put: (value: string, n: number) => void,
): Promise<void> {
  let values: Record<string, number>;
  try {
    values = await read();
  } catch {
    family.reset();
    return;
  }
  family.reset();
  for (const [value, n] of Object.entries(values)) put(value, n);
}

export const createMetrics = (options: MetricsOptions = {}): Metrics => {
  const registry = new Registry();
  if (options.process ?? true) {
    collectDefaultMetrics({ register: registry });
    for (const name of GAUGES_NAMED_TOTAL) registry.removeSingleMetric(name);
  }
  const registers = [registry];
  const { calls, callSeconds, errors, requests, requestSeconds, rateLimited, streams, restarts } =
    createInstruments(registers, options);

  function replacing(name: string): void {
    if (registry.getSingleMetric(name) !== undefined) registry.removeSingleMetric(name);
  }

  return {
    call(tool, outcome, seconds) {
      calls.inc({ tool, outcome });
      callSeconds.observe({ tool }, seconds);
    },
    error: (code) => errors.inc({ code }),
    http({ method, route, status, seconds, tenant }) {
      const labels = { method, route, status: String(status) };
      requests.inc(labels);
      requestSeconds.observe(labels, seconds);
      if (status === 429) rateLimited.inc({ tenant: tenant ?? '(none)' });
    },
    stream(kind) {
      streams.inc({ kind });
      let open = true;
      return () => {
        if (!open) return;
        open = false;
        streams.dec({ kind });
      };
    },
    workerRestart: (reason) => restarts.inc({ reason }),
    gauge(name, help, read) {
      replacing(name);
      new Gauge({
        name,
        help,
        registers,
        async collect() {
          let value: number;
          try {
            value = await read();
          } catch {
            value = Number.NaN;
          }
          this.set(value);
        },
      });
    },
    labelledCount(name, help, label, read) {
      replacing(name);
      new Counter({
        name,
        help,
        labelNames: [label],
        registers,
        async collect() {
          await refill(this, read, (value, n) => this.inc({ [label]: value }, n));
        },
      });
    },
    labelledGauge(name, help, label, read) {
      replacing(name);
      new Gauge({
        name,
        help,
        labelNames: [label],
        registers,
        async collect() {
          await refill(this, read, (value, n) => this.set({ [label]: value }, n));
        },
      });
    },
    render: () => registry.metrics(),
    contentType: registry.contentType,
  };
};

/** The agent service's `observe` hook: client-defined and unknown names collapse to one label each. */
export const observeCalls =
  (metrics: Metrics) =>
  (
    result: { name: string; ok: boolean; error?: { code: string }; durationMs: number },
    remote: boolean,
  ): void => {
    const tool = remote ? '(remote)' : result.error?.code === 'UNKNOWN_TOOL' ? '(unknown)' : result.name;
    metrics.call(tool, result.ok ? 'ok' : (result.error?.code ?? 'TOOL_FAILED'), result.durationMs / 1000);
  };

/** Durable log usage per tenant (issue 11), read at every scrape. */
export const withLogUsage = (metrics: Metrics, usage: () => Promise<TenantLogUsage[]>): Metrics => {
  const perTenant = (pick: (u: TenantLogUsage) => number) => async (): Promise<Record<string, number>> =>
    Object.fromEntries((await usage()).map((u) => [u.tenantId, pick(u)]));
  metrics.labelledGauge(
    'dsh_store_log_bytes',
    'Durable log bytes per tenant (events plus payloads stored once).',
    'tenant',
    perTenant((u) => u.bytes),
  );
  metrics.gauge('dsh_store_log_budget_bytes', 'Durable log bytes each tenant may hold.', async () => {
    const first = (await usage())[0];
    if (first === undefined) throw new Error('no tenant yet');
    return first.budget;
  });
  metrics.labelledCount(
    'dsh_store_payloads_dropped_total',
    'Large values not kept because their tenant was over budget (a count since the tenant was made).',
    'tenant',
    perTenant((u) => u.dropped),
  );
  metrics.labelledCount(
    'dsh_store_appends_refused_total',
    'Events refused (calls not run) because their tenant was over budget (a count since the tenant was made).',
    'tenant',
    perTenant((u) => u.refused),
  );
  return metrics;
};
