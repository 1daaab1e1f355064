// The operator view (admin key): tenants (GET /v1/tenants), the service's totals, warm pool,
// isolate workers and workspace disk as /metrics exposes them, and disk per workspace
// (GET /v1/admin/workspaces, a page at a time: `?after=` follows the API's `next`); its actions
// (create tenants, keys, one tenant's agents) are in ./operator-actions.ts.
import { Hono } from 'hono';
import { type ApiFetch, apiJson, apiRequest } from './api.ts';
import { type ConsoleEnv, requireSession } from './guard.ts';
import { operatorActionRoutes } from './operator-actions.ts';
import type { Sessions } from './sessions.ts';
import { usedText } from './views/agents.ts';
import { h, page, table, when } from './views/layout.ts';
import { createTenantForm } from './views/tenants.ts';

/** The gauges shown, by their Prometheus sample (name with labels). */
const GAUGES: [string, string][] = [
  ['dsh_sandboxes_live', 'sandboxes held'],
  ['dsh_call_batches_in_flight', 'call batches running'],
  ['dsh_host_requests_pending', 'host requests pending'],
  ['dsh_warm_pool_size', 'warm pool size'],
  ['dsh_warm_pool_available', 'warm pool ready'],
  ['dsh_isolate_workers', 'isolate workers'],
  ['dsh_terminal_sockets_open', 'terminal sockets'],
  ['dsh_connections_open', 'connections open'],
  ['dsh_workspace_disk_bytes{kind="used"}', 'workspace disk used (bytes)'],
  ['dsh_workspace_disk_bytes{kind="free"}', 'workspace disk free (bytes)'],
];

/** Samples of Prometheus text by name-with-labels (comments skipped). */
export const samplesOf = (text: string): Map<string, string> => {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    if (space > 0) out.set(line.slice(0, space), line.slice(space + 1));
  }
  return out;
};

interface TenantRow {
  id: string;
  name: string;
  createdAt: number;
}

interface WorkspacePage {
  workspaces: { tenantId: string; agentId: string; disk?: { usedBytes: number; limitBytes: number } }[];
  next?: string;
}

/** Workspaces on one operator page. */
const WORKSPACE_PAGE = 50;

export const operatorRoutes = (fetch: ApiFetch, sessions: Sessions): Hono<ConsoleEnv> => {
  const app = new Hono<ConsoleEnv>();
  app.use('/console/operator/*', requireSession(sessions, 'operator'));
  app.route('/', operatorActionRoutes(fetch));
  app.get('/console/operator', requireSession(sessions, 'operator'), async (c) => {
    const key = c.get('session').key;
    const { tenants } = await apiJson<{ tenants: TenantRow[] }>(fetch, c, key, '/v1/tenants');
    const metrics = samplesOf(await (await apiRequest(fetch, c, key, '/metrics')).text());
    const after = c.req.query('after');
    const query = new URLSearchParams({ limit: String(WORKSPACE_PAGE), ...(after ? { after } : {}) });
    const workspaces = await apiJson<WorkspacePage>(fetch, c, key, `/v1/admin/workspaces?${query}`);
    const logBytes = (id: string) => metrics.get(`dsh_store_log_bytes{tenant="${id}"}`) ?? '0';
    return c.html(
      await page(
        { title: 'Operator', session: c.get('session') },
        h('h2', null, 'Service'),
        table(
          ['measure', 'value'],
          GAUGES.filter(([name]) => metrics.has(name)).map(([name, label]) =>
            h('tr', null, h('td', null, label), h('td', { 'data-metric': name }, metrics.get(name) ?? '')),
          ),
        ),
        h('h2', null, 'Tenants'),
        createTenantForm(c.get('session')),
        table(
          ['tenant', 'name', 'log bytes', 'created'],
          tenants.map((t) =>
            h(
              'tr',
              { 'data-tenant': t.id },
              h('td', null, h('a', { href: `/console/operator/tenants/${encodeURIComponent(t.id)}` }, t.id)),
              h('td', null, t.name),
              h('td', null, logBytes(t.id)),
              h('td', null, when(t.createdAt)),
            ),
          ),
        ),
        h('h2', null, 'Disk per workspace'),
        workspaces.workspaces.length === 0
          ? h('p', { class: 'muted' }, 'No agent has a sandbox.')
          : table(
              ['tenant', 'agent', 'disk'],
              workspaces.workspaces.map((w) =>
                h(
                  'tr',
                  { 'data-workspace': w.agentId },
                  h('td', null, w.tenantId),
                  h('td', null, w.agentId),
                  h('td', null, usedText(w.disk)),
                ),
              ),
            ),
        workspaces.next === undefined
          ? null
          : h(
              'a',
              { href: `/console/operator?${new URLSearchParams({ after: workspaces.next })}` },
              'Next workspaces',
            ),
      ),
    );
  });
  return app;
};
