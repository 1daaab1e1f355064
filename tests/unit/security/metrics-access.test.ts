// /metrics is the operator's (issue 28: it showed tenant ids to anyone who reached it): over real
// HTTP it answers only the metrics key (DSH_METRICS_KEY, a scraper's key that opens nothing else)
// or the admin key; without a key, or with a tenant's, it is 401 and shows nothing; with neither
// key configured it is off (403), never open.

import type { AddressInfo } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp } from '../../../host/api/app.ts';
import { ADMIN_KEY, type Api, makeApi } from '../api/harness.ts';

const METRICS_KEY = 'metrics-key-for-tests-0123456789';

describe('GET /metrics over HTTP', () => {
  let api: Api | undefined;
  let server: ServerType | undefined;
  afterEach(async () => {
    if (server !== undefined) await new Promise((r) => server?.close(r));
    await api?.close();
    server = undefined;
    api = undefined;
  });

  const start = async (options: Parameters<typeof makeApi>[1] = {}) => {
    api = await makeApi({}, options);
    const app = api.app;
    server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
    });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const get = async (path: string, key?: string) => {
      const res = await fetch(`${url}${path}`, {
        headers: key === undefined ? {} : { Authorization: `Bearer ${key}` },
      });
      return { status: res.status, text: await res.text(), headers: res.headers };
    };
    return { api, get };
  };

  it('answers the metrics key and the admin key only; tenant ids reach nobody else', async () => {
    const { api, get } = await start({ app: { metricsKey: METRICS_KEY } });
    const agent = await api.createAgent(api.keyA);
    await api.call(api.keyA, agent.id, [
      { id: 'c', name: 'write', arguments: { file_path: 'a', content: 'x' } },
    ]);
    const tenantA = (await api.store.tenants.verifyKey(api.keyA))?.id as string;

    for (const key of [undefined, api.keyA, api.keyB, 'metrics-key-for-tests-0123456780']) {
      const refused = await get('/metrics', key);
      expect(refused.status, String(key)).toBe(401);
      expect(refused.headers.get('www-authenticate')).toContain('Bearer');
      expect(refused.text).not.toContain(tenantA);
      expect(refused.text).not.toContain('dsh_');
    }
    for (const key of [METRICS_KEY, ADMIN_KEY]) {
      const scraped = await get('/metrics', key);
      expect(scraped.status).toBe(200);
      expect(scraped.headers.get('content-type')).toContain('text/plain');
      expect(scraped.text).toContain(`dsh_store_log_bytes{tenant="${tenantA}"}`);
    }
    // The metrics key opens nothing but /metrics.
    expect((await get('/v1/tenants', METRICS_KEY)).status).toBe(401);
    expect((await get('/v1/admin/workspaces', METRICS_KEY)).status).toBe(401);
    expect((await get('/v1/agents', METRICS_KEY)).status).toBe(401);
  });

  it('is off (403) when neither a metrics key nor an admin key is configured', async () => {
    const { api, get } = await start();
    // makeApi always sets the admin key; an app made without one:
    const bare = createApp({ startedAt: Date.now(), version: 'test', store: api.store, agents: api.agents });
    for (const key of [undefined, api.keyA]) {
      const res = await bare.request('/metrics', {
        headers: key === undefined ? {} : { Authorization: `Bearer ${key}` },
      });
      expect(res.status).toBe(key === undefined ? 401 : 403);
      expect(await res.text()).not.toContain('dsh_');
    }
    // The served app with only the admin key: the admin key opens it.
    expect((await get('/metrics', ADMIN_KEY)).status).toBe(200);
  });
});
