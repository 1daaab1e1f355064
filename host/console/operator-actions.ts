// The operator's actions (admin key; mounted by ./operator.ts): create a tenant, one tenant's page
// (its keys and its agents), issue and revoke its keys. Every change is a v1
// request with the admin key after the CSRF check.
// Invariants: a new key is shown once, in the answer to the POST that made it (never in a URL or a
// redirect, and the response is no-store like every console page); the agents are read from
// GET /v1/tenants/:id/agents, their disk from GET /v1/admin/workspaces, at most WORKSPACE_PAGES
// pages of it per view; its keys from GET /v1/tenants/:id/keys, at most KEY_PAGES pages.
import { type Context, Hono } from 'hono';
import { type ApiFetch, apiJson, apiPost, apiRequest, failureOf } from './api.ts';
import { type ConsoleEnv, checkCsrf } from './guard.ts';
import { fieldOf } from './views/actions.ts';
import { h, page } from './views/layout.ts';
import {
  type KeyView,
  keyOnce,
  keysView,
  type TenantAgentView,
  tenantAgentsView,
  type WorkspaceView,
} from './views/tenants.ts';

/** Pages of 100 workspaces a tenant's page reads at most (each is measured, 4 at a time). */
const WORKSPACE_PAGES = 10;

/**
 * Pages of 100 keys a tenant's page reads at most: a tenant holds 100 live keys, the 100 ended
 * last, and those ended since it last made one (host/store/tenant-keys.ts), so 3 pages hold them.
 */
const KEY_PAGES = 5;

const tenantPath = (id: string) => `/v1/tenants/${encodeURIComponent(id)}`;

/**
 * Up to `maxPages` pages of 100 of a paged admin list (`?after=&limit=`, answered with `next` while
 * more follow), and whether it was read to its end.
 */
const readPages = async <T>(
  fetch: ApiFetch,
  c: Context<ConsoleEnv>,
  adminKey: string,
  path: string,
  field: string,
  maxPages: number,
): Promise<{ items: T[]; complete: boolean }> => {
  const items: T[] = [];
  let after: string | undefined;
  let pages = 0;
  do {
    const query = new URLSearchParams({ limit: '100', ...(after ? { after } : {}) });
    const got = await apiJson<Record<string, unknown> & { next?: string }>(
      fetch,
      c,
      adminKey,
      `${path}?${query}`,
    );
    items.push(...(got[field] as T[]));
    after = got.next;
    pages++;
  } while (after !== undefined && pages < maxPages);
  return { items, complete: after === undefined };
};

export const operatorActionRoutes = (fetch: ApiFetch): Hono<ConsoleEnv> => {
  const app = new Hono<ConsoleEnv>();
  const key = (c: { get(k: 'session'): { key: string } }) => c.get('session').key;

  const tenantPage = async (c: Context<ConsoleEnv>, id: string, shown?: ReturnType<typeof keyOnce>) => {
    const tenant = await apiJson<{ id: string; name: string; state: string }>(
      fetch,
      c,
      key(c),
      tenantPath(id),
    );
    const { items: keys } = await readPages<KeyView>(
      fetch,
      c,
      key(c),
      `${tenantPath(id)}/keys`,
      'keys',
      KEY_PAGES,
    );
    const { agents } = await apiJson<{ agents: TenantAgentView[] }>(
      fetch,
      c,
      key(c),
      `${tenantPath(id)}/agents`,
    );
    const every = await readPages<WorkspaceView>(
      fetch,
      c,
      key(c),
      '/v1/admin/workspaces',
      'workspaces',
      WORKSPACE_PAGES,
    );
    const workspaces = every.items.filter((w) => w.tenantId === id);
    return c.html(
      await page(
        { title: `Tenant ${tenant.name}`, session: c.get('session') },
        h(
          'p',
          null,
          h('a', { href: '/console/operator' }, 'all tenants'),
          ` · ${tenant.id} · ${tenant.state}`,
        ),
        shown ?? null,
        ...keysView(c.get('session'), id, keys, Date.now()),
        ...tenantAgentsView(agents, workspaces, every.complete),
      ),
    );
  };

  app.post('/console/operator/tenants', async (c) => {
    const form = await checkCsrf(c);
    const tenant = await apiPost<{ id: string; apiKey: string }>(fetch, c, key(c), '/v1/tenants', {
      name: fieldOf(form, 'name'),
    });
    return tenantPage(c, tenant.id, keyOnce(tenant.apiKey, 'The tenant was created with its first key.'));
  });

  app.get('/console/operator/tenants/:id', (c) => tenantPage(c, c.req.param('id')));

  app.post('/console/operator/tenants/:id/keys', async (c) => {
    const form = await checkCsrf(c);
    const id = c.req.param('id');
    const name = fieldOf(form, 'name');
    const days = fieldOf(form, 'days');
    const issued = await apiPost<{ apiKey: string }>(fetch, c, key(c), `${tenantPath(id)}/keys`, {
      ...(name === '' ? {} : { name }),
      // A number of days the API checks (a word goes as typed, and the API says what is wrong).
      ...(days === '' ? {} : { expiresAt: Date.now() + Math.round(Number(days) * 86_400_000) || days }),
    });
    return tenantPage(c, id, keyOnce(issued.apiKey, 'The key was issued.'));
  });

  app.post('/console/operator/tenants/:id/keys/:keyId/revoke', async (c) => {
    await checkCsrf(c);
    const id = c.req.param('id');
    const res = await apiRequest(
      fetch,
      c,
      key(c),
      `${tenantPath(id)}/keys/${encodeURIComponent(c.req.param('keyId'))}`,
      { method: 'DELETE' },
    );
    if (!res.ok) throw await failureOf(res);
    await res.body?.cancel();
    return c.redirect(`/console/operator/tenants/${encodeURIComponent(id)}`, 303);
  });
  return app;
};
