// /metrics (issue 17 §3): the text parses as Prometheus exposition and carries what an operator of
// the service watches: the process (CPU, memory, start time, heap, event-loop lag), HTTP requests and
// latency by route pattern and status, 429s per tenant, open SSE streams, the warm pool, sandboxes by
// state, pending host requests, isolate worker restarts, workspace disk, build info, and the
// families that were there before (tool calls, their latency, API errors, sandboxes, batches, workers).
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../../helpers/until.ts';
import { ADMIN_KEY, type Api, makeApi } from './harness.ts';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the text exposition format strictly enough that a malformed line fails the test. */
const parse = (text: string): { types: Map<string, string>; samples: Sample[] } => {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type) {
      expect(types.has(type[1] as string), `TYPE ${type[1]} twice`).toBe(false);
      types.set(type[1] as string, type[2] as string);
      continue;
    }
    if (/^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*$/.test(line)) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/.exec(line);
    expect(sample, `not an exposition line: ${line}`).not.toBeNull();
    const labels: Record<string, string> = {};
    for (const [, key, value] of (sample?.[2] ?? '').matchAll(
      /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g,
    ))
      labels[key as string] = value as string;
    const value = Number(sample?.[3] === '+Inf' ? Number.POSITIVE_INFINITY : sample?.[3]);
    samples.push({ name: sample?.[1] as string, labels, value });
  }
  for (const { name } of samples) {
    const family = [...types.keys()].find(
      (f) =>
        name === f || (/_(bucket|sum|count)$/.test(name) && name.replace(/_(bucket|sum|count)$/, '') === f),
    );
    expect(family, `sample ${name} has no TYPE`).toBeDefined();
  }
  return { types, samples };
};

let api: Api;
afterEach(async () => {
  await api.close();
});

const scrape = async () => parse((await api.request(ADMIN_KEY, 'GET', '/metrics')).text);
const find = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

describe('/metrics', () => {
  it('parses, and has the process, HTTP, pool, sandbox, request, disk and build families', async () => {
    api = await makeApi(
      {},
      {
        app: {
          pool: () => ({ size: 2, available: 1 }),
          workspaceDisk: () => ({ used: 1000, free: 5000 }),
        },
      },
    );
    const agent = await api.createAgent(api.keyA);
    await api.call(api.keyA, agent.id, [
      { id: 'c1', name: 'write', arguments: { file_path: 'a.txt', content: 'x' } },
    ]);
    const { types, samples } = await scrape();
    for (const family of [
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'process_start_time_seconds',
      'nodejs_eventloop_lag_seconds',
      'nodejs_heap_size_used_bytes',
      'dsh_http_requests_total',
      'dsh_http_request_seconds',
      'dsh_http_rate_limited_total',
      'dsh_sse_streams_open',
      'dsh_isolate_worker_restarts_total',
      'dsh_build_info',
      // The families that were there before keep their names.
      'dsh_tool_calls_total',
      'dsh_tool_call_seconds',
      'dsh_api_errors_total',
      'dsh_sandboxes_live',
      'dsh_call_batches_in_flight',
      'dsh_isolate_workers',
    ])
      expect(types.has(family), family).toBe(true);
    expect(types.get('dsh_http_request_seconds')).toBe('histogram');
    expect(
      find(samples, 'dsh_http_requests_total', {
        method: 'POST',
        route: '/v1/agents/:id/calls',
        status: '200',
      })?.value,
    ).toBe(1);
    expect(find(samples, 'dsh_http_requests_total', { route: '/v1/agents', status: '201' })?.value).toBe(1);
    expect(find(samples, 'dsh_warm_pool_size')?.value).toBe(2);
    expect(find(samples, 'dsh_warm_pool_available')?.value).toBe(1);
    expect(find(samples, 'dsh_sandboxes', { state: 'assigned' })?.value).toBe(1);
    expect(find(samples, 'dsh_sandboxes', { state: 'warm' })?.value).toBe(1);
    expect(find(samples, 'dsh_host_requests_pending')?.value).toBe(0);
    expect(find(samples, 'dsh_workspace_disk_bytes', { kind: 'free' })?.value).toBe(5000);
    expect(find(samples, 'dsh_build_info', { version: 'dev' })?.value).toBe(1);
    expect(find(samples, 'dsh_tool_calls_total', { tool: 'write', outcome: 'ok' })?.value).toBe(1);
  });

  it('counts pending host requests, open SSE streams and 429s per tenant', async () => {
    api = await makeApi({ tenantConcurrency: 2 });
    const agent = await api.createAgent(api.keyA);
    await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/remote-tools`, {
      tools: [{ name: 'ask_client', description: 'Waits for the client', parameters: { type: 'object' } }],
    });
    // One slot: a call that waits for the client's answer (a pending host request).
    const controller = new AbortController();
    const call = Promise.resolve(
      api.app.request(`/v1/agents/${agent.id}/calls`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${api.keyA}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ calls: [{ id: 'r', name: 'ask_client', arguments: {} }] }),
        signal: controller.signal,
      }),
    ).catch(() => undefined);
    await until(async () => find((await scrape()).samples, 'dsh_host_requests_pending')?.value === 1);
    // The other slot: an event stream, open until cancelled.
    const stream = await api.app.request(`/v1/agents/${agent.id}/events`, {
      headers: { Authorization: `Bearer ${api.keyA}`, Accept: 'text/event-stream' },
    });
    await until(
      async () => find((await scrape()).samples, 'dsh_sse_streams_open', { kind: 'events' })?.value === 1,
    );
    const refused = await api.request(api.keyA, 'GET', '/v1/agents');
    expect(refused.status).toBe(429);
    // Another tenant's slots are its own.
    expect((await api.request(api.keyB, 'GET', '/v1/agents')).status).toBe(200);
    const { samples } = await scrape();
    const limited = samples.filter((s) => s.name === 'dsh_http_rate_limited_total');
    expect(limited).toHaveLength(1);
    expect(limited[0]?.value).toBe(1);
    expect(limited[0]?.labels.tenant).toMatch(/^ten_/);
    await stream.body?.cancel();
    controller.abort();
    await call;
    await until(
      async () => find((await scrape()).samples, 'dsh_sse_streams_open', { kind: 'events' })?.value === 0,
    );
  });
});
