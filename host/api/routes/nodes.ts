// The nodes over HTTP, for the operator (admin key): GET /v1/nodes lists each node of DSH_NODES
// (its URL, whether it answers, whether it is cordoned, its capacity, its agents), and POST
// /v1/nodes/:name/cordon and /uncordon stop and resume new agents going there (docs/nodes.md,
// "Cordon and drain"). Placement (host/sandbox/nodes/placement.ts) owns what they mean; a cordon is
// kept in the store, so it holds across restarts and for every replica.
// Invariant: nothing here is reachable with a tenant key (adminAuth answers 401 for one).
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import { SandboxError } from '../../errors.ts';
import { adminAuth } from '../auth.ts';
import { jsonResponse } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { ErrorBody, NodeList, NodeView } from '../schemas.ts';

/** A node as GET /v1/nodes shows it. */
export interface NodeInfo {
  name: string;
  url?: string;
  reachable: boolean;
  unreachableSince?: number;
  error?: string;
  cordoned: boolean;
  agents: number;
  capacity?: object;
}

/** What the routes ask of placement; none: the service runs on its own engine (no DSH_NODES). */
export interface NodeAdmin {
  list(): Promise<NodeInfo[]>;
  cordon(name: string, cordoned: boolean): Promise<void>;
}

const adminResponses = {
  401: jsonResponse('Wrong admin key', ErrorBody),
  403: jsonResponse('No admin key configured', ErrorBody),
};

export const nodeRoutes = (nodes: NodeAdmin | undefined, adminKey: string | undefined): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.get(
    '/v1/nodes',
    describeRoute({
      operationId: 'listNodes',
      tags: ['nodes'],
      description:
        'Needs the admin key. The nodes of DSH_NODES: whether each answers now, whether it is cordoned (no new agents), its capacity as last read and how many agents it holds. Empty when the service runs its sandboxes on its own engine.',
      responses: { 200: jsonResponse('The nodes', NodeList), ...adminResponses },
    }),
    adminAuth(adminKey),
    async (c) => c.json({ nodes: (await nodes?.list()) ?? [] }),
  );
  for (const [verb, cordoned] of [
    ['cordon', true],
    ['uncordon', false],
  ] as const) {
    app.post(
      `/v1/nodes/:name/${verb}`,
      describeRoute({
        operationId: `${verb}Node`,
        tags: ['nodes'],
        description: cordoned
          ? 'Needs the admin key. The node gets no new agents (children of its agents included); its agents keep working there. Kept in the store: it holds across restarts and for every replica. Draining is cordoning, then deleting or waiting out its agents.'
          : 'Needs the admin key. The node takes new agents again (a cordon from DSH_NODES_CORDONED comes back at the next start).',
        responses: {
          200: jsonResponse('The node', NodeView),
          ...adminResponses,
          404: jsonResponse('No node of that name', ErrorBody),
        },
      }),
      adminAuth(adminKey),
      async (c) => {
        const name = c.req.param('name');
        if (nodes === undefined)
          throw new SandboxError(
            'NOT_FOUND',
            `No node is named "${name}": this service runs its sandboxes on its own engine (DSH_NODES is not set).`,
          );
        await nodes.cordon(name, cordoned);
        const node = (await nodes.list()).find((n) => n.name === name);
        return c.json(node);
      },
    );
  }
  return app;
};
