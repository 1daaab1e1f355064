// The nodes' admin routes (GET /v1/nodes, POST /v1/nodes/:name/cordon|uncordon) through the app:
// only the admin key opens them (a tenant key is refused like a wrong one), a name the nodes do not
// know is 404 (hostile ones too, never reaching placement as anything but a name), a cordon
// answers the node as listed; without DSH_NODES the list is empty and every cordon 404.
import { afterEach, expect, it } from 'vitest';
import type { NodeAdmin, NodeInfo } from '../../../host/api/routes/nodes.ts';
import { SandboxError } from '../../../host/errors.ts';
import { ADMIN_KEY, type Api, makeApi } from './harness.ts';

let api: Api | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

/** Two nodes in memory; `asked` records the names cordon() was given. */
const fakeNodes = () => {
  const nodes: NodeInfo[] = [
    { name: 'a', url: 'https://127.0.0.1:7443', reachable: true, cordoned: false, agents: 2 },
    {
      name: 'b',
      url: 'https://127.0.0.1:7444',
      reachable: false,
      unreachableSince: 1,
      error: 'refused',
      cordoned: false,
      agents: 1,
    },
  ];
  const asked: string[] = [];
  const admin: NodeAdmin = {
    list: async () => nodes.map((n) => ({ ...n })),
    async cordon(name, cordoned) {
      asked.push(name);
      const node = nodes.find((n) => n.name === name);
      if (node === undefined) throw new SandboxError('NOT_FOUND', `No node is named "${name}".`);
      node.cordoned = cordoned;
    },
  };
  return { admin, asked };
};

it('lists and cordons nodes with the admin key only', async () => {
  const { admin, asked } = fakeNodes();
  api = await makeApi({}, { app: { nodes: admin } });
  const listed = await api.request(ADMIN_KEY, 'GET', '/v1/nodes');
  expect(listed.status).toBe(200);
  expect(listed.json.nodes.map((n: NodeInfo) => [n.name, n.reachable, n.cordoned, n.agents])).toEqual([
    ['a', true, false, 2],
    ['b', false, false, 1],
  ]);
  for (const [method, path] of [
    ['GET', '/v1/nodes'],
    ['POST', '/v1/nodes/a/cordon'],
    ['POST', '/v1/nodes/a/uncordon'],
  ] as const) {
    expect((await api.request(api.keyA, method, path)).status).toBe(401);
    expect((await api.request('not-a-key', method, path)).status).toBe(401);
  }
  expect(asked).toEqual([]);
  const cordoned = await api.request(ADMIN_KEY, 'POST', '/v1/nodes/b/cordon');
  expect(cordoned.status).toBe(200);
  expect(cordoned.json).toMatchObject({ name: 'b', cordoned: true, reachable: false, error: 'refused' });
  expect((await api.request(ADMIN_KEY, 'POST', '/v1/nodes/b/uncordon')).json.cordoned).toBe(false);
  for (const hostile of ['nope', '..%2Fa', "a'%3B--", '%00']) {
    const r = await api.request(ADMIN_KEY, 'POST', `/v1/nodes/${hostile}/cordon`);
    expect(r.status, hostile).toBe(404);
    expect(r.json.error.code).toBe('NOT_FOUND');
  }
  expect(asked.slice(2)).toEqual(['nope', '../a', "a';--", '\0']);
});

it('answers no nodes, and 404 to every cordon, when the service runs on its own engine', async () => {
  api = await makeApi();
  expect((await api.request(ADMIN_KEY, 'GET', '/v1/nodes')).json).toEqual({ nodes: [] });
  const r = await api.request(ADMIN_KEY, 'POST', '/v1/nodes/a/cordon');
  expect(r.status).toBe(404);
  expect(r.json.error.message).toMatch(/DSH_NODES is not set/);
});
