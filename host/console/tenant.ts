// The tenant's pages: agents, one agent (requests, timeline), its event stream and export, answers
// to host requests, files, and terminals. Every read and write is a v1 request with the session's
// key (api.ts), so another tenant's agent is the API's 404 here too.
// Its pages live in tenant-agents.ts (agents, events, requests), tenant-actions.ts (create,
// delete, live state, run), tenant-files.ts (files, terminals) and tenant-workspace.ts (upload,
// delete, open and close terminals); this module puts them behind
// the tenant session.
import { Hono } from 'hono';
import type { ApiFetch } from './api.ts';
import { type ConsoleEnv, requireSession } from './guard.ts';
import type { Sessions } from './sessions.ts';
import { actionRoutes } from './tenant-actions.ts';
import { agentPages } from './tenant-agents.ts';
import { filePages } from './tenant-files.ts';
import { workspaceRoutes } from './tenant-workspace.ts';

export const tenantRoutes = (fetch: ApiFetch, sessions: Sessions): Hono<ConsoleEnv> => {
  const app = new Hono<ConsoleEnv>();
  app.use('/console/agents', requireSession(sessions, 'tenant'));
  app.use('/console/agents/*', requireSession(sessions, 'tenant'));
  app.use('/console/agents.json', requireSession(sessions, 'tenant'));
  app.route('/', actionRoutes(fetch));
  app.route('/', agentPages(fetch));
  app.route('/', filePages(fetch));
  app.route('/', workspaceRoutes(fetch));
  return app;
};
