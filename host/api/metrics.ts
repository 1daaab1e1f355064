// A small Prometheus registry: counters and a histogram with labels, plus gauges read at scrape
// time. Text exposition format 0.0.4. Label values are escaped; names are fixed in code.
import type { TenantLogUsage } from '../store/types.ts';

type Labels = Record<string, string>;

const escapeLabel = (value: string): string =>
  value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const labelText = (labels: Labels): string => {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
};
const key = (labels: Labels): string => JSON.stringify(Object.entries(labels).sort());

export interface Metrics {
  /** A settled tool call: tool name, outcome `ok` or the error code, and seconds taken. */
  call(tool: string, outcome: string, seconds: number): void;
  /** An API error response by code. */
  error(code: string): void;
  /** Registers a gauge read at every scrape. */
  gauge(name: string, help: string, read: () => number): void;
  render(): string;
}

const BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export const createMetrics = (): Metrics => {
  const calls = new Map<string, { labels: Labels; value: number }>();
  const errors = new Map<string, { labels: Labels; value: number }>();
  const latency = new Map<string, { labels: Labels; buckets: number[]; sum: number; count: number }>();
  const gauges: { name: string; help: string; read: () => number }[] = [];

  const inc = (map: typeof calls, labels: Labels) => {
    const k = key(labels);
    const entry = map.get(k) ?? { labels, value: 0 };
    entry.value++;
    map.set(k, entry);
  };

  return {
    call(tool, outcome, seconds) {
      inc(calls, { tool, outcome });
      const k = key({ tool });
      const h = latency.get(k) ?? { labels: { tool }, buckets: BUCKETS.map(() => 0), sum: 0, count: 0 };
      BUCKETS.forEach((le, i) => {
        if (seconds <= le) h.buckets[i] = (h.buckets[i] ?? 0) + 1;
      });
      h.sum += seconds;
      h.count++;
      latency.set(k, h);
    },
    error: (code) => inc(errors, { code }),
    gauge(name, help, read) {
      gauges.push({ name, help, read });
    },
    render() {
      const out: string[] = [];
      out.push(
        '# HELP dsh_tool_calls_total Tool calls settled, by tool and outcome (ok or error code).',
        '# TYPE dsh_tool_calls_total counter',
      );
      for (const { labels, value } of calls.values())
        out.push(`dsh_tool_calls_total${labelText(labels)} ${value}`);
      out.push(
        '# HELP dsh_api_errors_total API error responses by code.',
        '# TYPE dsh_api_errors_total counter',
      );
      for (const { labels, value } of errors.values())
        out.push(`dsh_api_errors_total${labelText(labels)} ${value}`);
      out.push('# HELP dsh_tool_call_seconds Tool call latency.', '# TYPE dsh_tool_call_seconds histogram');
      for (const h of latency.values()) {
        BUCKETS.forEach((le, i) => {
          out.push(
            `dsh_tool_call_seconds_bucket${labelText({ ...h.labels, le: String(le) })} ${h.buckets[i]}`,
          );
        });
        out.push(`dsh_tool_call_seconds_bucket${labelText({ ...h.labels, le: '+Inf' })} ${h.count}`);
        out.push(
          `dsh_tool_call_seconds_sum${labelText(h.labels)} ${h.sum}`,
          `dsh_tool_call_seconds_count${labelText(h.labels)} ${h.count}`,
        );
      }
      for (const g of gauges) {
        let value: number;
        try {
          value = g.read();
        } catch {
          value = Number.NaN;
        }
        out.push(`# HELP ${g.name} ${g.help}`, `# TYPE ${g.name} gauge`, `${g.name} ${value}`);
      }
      return `${out.join('\n')}\n`;
    },
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

// Durable log usage per tenant (issue 11), rendered after the registry's own families.

/** The log's bytes, dropped payloads and refused appends per tenant, as Prometheus text. */
export const logUsageText = (usage: readonly TenantLogUsage[]): string => {
  const out = [
    '# HELP dsh_store_log_bytes Durable log bytes per tenant (events plus payloads stored once).',
    '# TYPE dsh_store_log_bytes gauge',
    ...usage.map((u) => `dsh_store_log_bytes${labelText({ tenant: u.tenantId })} ${u.bytes}`),
    '# HELP dsh_store_log_budget_bytes Durable log bytes each tenant may hold.',
    '# TYPE dsh_store_log_budget_bytes gauge',
    ...usage.slice(0, 1).map((u) => `dsh_store_log_budget_bytes ${u.budget}`),
    '# HELP dsh_store_payloads_dropped_total Large values not kept because their tenant was over budget.',
    '# TYPE dsh_store_payloads_dropped_total counter',
    ...usage.map((u) => `dsh_store_payloads_dropped_total${labelText({ tenant: u.tenantId })} ${u.dropped}`),
    '# HELP dsh_store_appends_refused_total Events refused (calls not run) because their tenant was over budget.',
    '# TYPE dsh_store_appends_refused_total counter',
    ...usage.map((u) => `dsh_store_appends_refused_total${labelText({ tenant: u.tenantId })} ${u.refused}`),
  ];
  return `${out.join('\n')}\n`;
};

/** The same registry, its text followed by the log usage read at every scrape. */
export const withLogUsage = (metrics: Metrics, usage: () => TenantLogUsage[]): Metrics => ({
  ...metrics,
  render: () => {
    let extra: string;
    try {
      extra = logUsageText(usage());
    } catch {
      extra = '';
    }
    return metrics.render() + extra;
  },
});
