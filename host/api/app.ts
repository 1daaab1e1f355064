// The Hono application of the control plane. Grows route by route; every error leaves through
// the one error handler in ./errors.ts as { error: { code, message } }.

import { Hono } from 'hono';

export interface AppDeps {
  startedAt: number;
  version: string;
}

export const createApp = (deps: AppDeps): Hono => {
  const app = new Hono();
  app.get('/v1/health', (c) =>
    c.json({ ok: true, version: deps.version, uptimeMs: Date.now() - deps.startedAt }),
  );
  app.notFound((c) => c.json({ error: { code: 'NOT_FOUND', message: `no route ${c.req.method} ${c.req.path}` } }, 404));
  return app;
};
