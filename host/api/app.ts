// The Hono application of the control plane: middleware (request id, shutdown gate, body limits,
// timeouts, auth, per-tenant concurrency), the v1 routes, /openapi.json generated from the same
// valibot schemas that validate, and the one error handler (./errors.ts).
// createApp wires the parts, each in its own module: app-deps.ts (limits, dependencies, the shared
// state), app-gauges.ts (the /metrics gauges), app-admission.ts (the middleware: error answers,
// metrics, key attempts, body limits, deadlines, tenant admission and fair turns), app-routes.ts
// (the v1 routes in their order, /openapi.json).
import { Hono } from 'hono';
import { consoleRoutes } from '../console/index.ts';
import { useEntry, useV1Limits } from './app-admission.ts';
import { type AppDeps, type AppState, DEFAULT_LIMITS } from './app-deps.ts';
import { registerAppGauges } from './app-gauges.ts';
import { mountOpenApi, mountV1Routes } from './app-routes.ts';
import { createAuthThrottle } from './auth-throttle.ts';
import type { ApiEnv } from './env.ts';
import { createFairScheduler } from './fair.ts';
import { createLifecycle } from './lifecycle.ts';
import { createMetrics, withLogUsage } from './metrics.ts';
import { systemRoutes } from './routes/system.ts';

export { type ApiLimits, type AppDeps, DEFAULT_LIMITS } from './app-deps.ts';

export const createApp = (deps: AppDeps): Hono<ApiEnv> => {
  const limits = { ...DEFAULT_LIMITS, ...deps.limits };
  const state: AppState = {
    deps,
    limits,
    metrics: withLogUsage(deps.metrics ?? createMetrics(), () => deps.store.events.usage()),
    lifecycle: deps.lifecycle ?? createLifecycle(),
    throttle: deps.authThrottle ?? createAuthThrottle(),
    fair: deps.fair ?? createFairScheduler({ budgetMs: limits.fairTurnMs }),
    connections: deps.connections,
  };
  const { metrics, lifecycle } = state;
  registerAppGauges(state);

  const app = new Hono<ApiEnv>();
  useEntry(app, state);
  app.route(
    '/',
    systemRoutes({
      version: deps.version,
      startedAt: deps.startedAt,
      metrics,
      lifecycle,
      ...(deps.runtimes === undefined ? {} : { runtimes: deps.runtimes }),
      keys: {
        ...(deps.adminKey === undefined ? {} : { adminKey: deps.adminKey }),
        ...(deps.metricsKey === undefined ? {} : { metricsKey: deps.metricsKey }),
      },
    }),
  );

  useV1Limits(app, state);
  mountV1Routes(app, state);

  // The console (/console): pages over this same API, which it calls in-process (host/console).
  app.route('/', consoleRoutes({ fetch: (request, env) => app.fetch(request, env) }));
  mountOpenApi(app, state);
  return app;
};
