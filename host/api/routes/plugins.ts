// An agent's creator plugins (defined with cordis_define): list them, fetch one with its package
// list, and fetch one package with its code (a client needs the `client` body to run it on its
// side). Read-only: plugins are defined, run and stopped by the agent's cordis_* tools. Another
// tenant's agent, and another agent's plugin, answer 404.
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import type { AgentService } from '../../agents/service.ts';
import { jsonResponse } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { ErrorBody, PluginDetail, PluginList, PluginPackage } from '../schemas.ts';
import { loadAgent } from './agents.ts';

const notFound = { 404: jsonResponse('No such agent, plugin or package', ErrorBody) };

export const pluginRoutes = (agents: AgentService): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.get(
    '/v1/agents/:id/plugins',
    describeRoute({
      operationId: 'listPlugins',
      tags: ['plugins'],
      description: "The agent's creator plugins with their state and the tools they registered.",
      responses: { 200: jsonResponse("The agent's plugins", PluginList), ...notFound },
    }),
    loadAgent(agents),
    async (c) => c.json({ plugins: await (await agents.plugins(c.get('agent'))).list() }),
  );
  app.get(
    '/v1/agents/:id/plugins/:pluginId',
    describeRoute({
      operationId: 'getPlugin',
      tags: ['plugins'],
      description: 'One plugin with its packages (without code), recent logs and last error.',
      responses: { 200: jsonResponse('The plugin', PluginDetail), ...notFound },
    }),
    loadAgent(agents),
    async (c) => c.json(await (await agents.plugins(c.get('agent'))).get(c.req.param('pluginId'))),
  );
  app.get(
    '/v1/agents/:id/plugins/:pluginId/packages/:packageId',
    describeRoute({
      operationId: 'getPluginPackage',
      tags: ['plugins'],
      description: 'One immutable package with its code; a client runs its `client` body.',
      responses: { 200: jsonResponse('The package', PluginPackage), ...notFound },
    }),
    loadAgent(agents),
    async (c) =>
      c.json(
        await (await agents.plugins(c.get('agent'))).package(
          c.req.param('pluginId'),
          c.req.param('packageId'),
        ),
      ),
  );
  return app;
};
