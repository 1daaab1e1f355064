// The gauges of the control plane's /metrics that createApp (./app.ts) registers: sandboxes, call
// batches, isolate workers, the warm pool, pending host requests, workspace disk, HTTP connections,
// failed key attempts and agents per tenant. Each reads its source when /metrics is scraped; none holds state here.

import type { AppState } from './app-deps.ts';
import type { ConnectionGuard } from './connections.ts';

/** Registers the gauges on state.metrics; sources absent from deps (disk, connections) get none. */
export function registerAppGauges(state: AppState): void {
  const { deps, metrics, throttle } = state;
  metrics.gauge('dsh_sandboxes_live', 'Sandboxes this control plane holds a handle to.', () =>
    deps.agents.liveSandboxes(),
  );
  metrics.gauge('dsh_call_batches_in_flight', 'Call batches running now.', () => deps.agents.inFlight());
  metrics.gauge('dsh_isolate_workers', 'Live isolate worker processes.', () => deps.isolateWorkers?.() ?? 0);
  const pool = deps.pool;
  metrics.gauge('dsh_warm_pool_size', 'Sandboxes the warm pool keeps started and unassigned.', () =>
    pool === undefined ? 0 : pool().size,
  );
  metrics.gauge('dsh_warm_pool_available', 'Sandboxes ready in the warm pool now.', () =>
    pool === undefined ? 0 : pool().available,
  );
  metrics.labelledGauge(
    'dsh_sandboxes',
    'Sandboxes by state: assigned to an agent (a handle held here) or warm (ready in the pool).',
    'state',
    () => ({ assigned: deps.agents.liveSandboxes(), warm: pool === undefined ? 0 : pool().available }),
  );
  metrics.gauge(
    'dsh_host_requests_pending',
    'Host requests (approvals, remote tool calls, questions, …) waiting for an answer.',
    () => deps.store.requests.pending(),
  );
  const disk = deps.workspaceDisk;
  if (disk !== undefined) {
    metrics.labelledGauge(
      'dsh_workspace_disk_bytes',
      'The file system holding the workspaces: bytes used and free.',
      'kind',
      () => disk(),
    );
  }
  const connections = deps.connections;
  if (connections !== undefined) {
    const stat = (key: keyof ReturnType<ConnectionGuard['stats']>) => () => connections.stats()[key];
    metrics.gauge('dsh_connections_open', 'Open HTTP connections.', stat('open'));
    metrics.gauge(
      'dsh_connections_unauthenticated',
      'Open HTTP connections that have not presented a valid key yet.',
      stat('unauthenticated'),
    );
    metrics.gauge(
      'dsh_connections_evicted',
      'Unauthenticated connections closed since start to make room for newer ones.',
      stat('evicted'),
    );
    metrics.gauge(
      'dsh_connections_silent',
      'Connections closed since start for sending nothing in time.',
      stat('silent'),
    );
  }

  metrics.gauge('dsh_auth_failures', 'Failed key attempts since start.', () => throttle.stats().failures);
  metrics.gauge(
    'dsh_auth_throttled',
    'Key attempts refused unchecked since start: their address had failed too often (AUTH_THROTTLED).',
    () => throttle.stats().refused,
  );
  const agentStore = deps.store.agents;
  if (agentStore !== undefined) {
    metrics.labelledGauge('dsh_agents', 'Live agents per tenant (children included).', 'tenant', async () => {
      const counts: Record<string, number> = {};
      for (const { tenantId } of await agentStore.listAll()) counts[tenantId] = (counts[tenantId] ?? 0) + 1;
      return counts;
    });
  }
}
