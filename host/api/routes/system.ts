// System routes: health (no key), Prometheus metrics (the metrics or the admin key: ../auth.ts
// metricsAuth). (/openapi.json is mounted by app.ts, which needs the finished app.)
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import type { SandboxRuntime } from '../../sandbox/runtimes.ts';
import { metricsAuth } from '../auth.ts';
import { jsonResponse } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import type { Lifecycle } from '../lifecycle.ts';
import type { Metrics } from '../metrics.ts';
import { ErrorBody, Health } from '../schemas.ts';

export interface SystemRoutesOptions {
  version: string;
  startedAt: number;
  metrics: Metrics;
  lifecycle: Lifecycle;
  /** The keys that open /metrics; with none, /metrics answers 403. */
  keys: { adminKey?: string; metricsKey?: string };
  /** The sandbox runtimes the engine offers; health leaves them out when this fails or takes over 2 s. */
  runtimes?: () => Promise<readonly SandboxRuntime[]>;
}

/** The runtimes, or undefined when they cannot be read at once (health must answer fast). */
const runtimesNow = async (
  read: (() => Promise<readonly SandboxRuntime[]>) | undefined,
): Promise<SandboxRuntime[] | undefined> => {
  if (read === undefined) return undefined;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(resolve, 2000, undefined);
  });
  try {
    const offered = await Promise.race([read(), late]);
    return offered === undefined ? undefined : [...offered];
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
};

export const systemRoutes = (options: SystemRoutesOptions): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.get(
    '/v1/health',
    describeRoute({
      operationId: 'health',
      tags: ['system'],
      security: [],
      responses: {
        200: jsonResponse('The service is up', Health),
        // Health takes no key, body or parameter, so GET itself has no client error; another method
        // on the path is answered 404 with the error body, and a proxy in front may answer others.
        '4XX': jsonResponse('Not a GET (404 NOT_FOUND), or refused before the service', ErrorBody),
        503: { description: 'Shutting down' },
      },
    }),
    async (c) => {
      const runtimes = await runtimesNow(options.runtimes);
      return c.json(
        {
          ok: !options.lifecycle.shuttingDown,
          version: options.version,
          uptimeMs: Date.now() - options.startedAt,
          ...(runtimes === undefined ? {} : { runtimes }),
        },
        options.lifecycle.shuttingDown ? 503 : 200,
      );
    },
  );
  app.get(
    '/metrics',
    describeRoute({
      operationId: 'metrics',
      tags: ['system'],
      description:
        'Needs the metrics key (DSH_METRICS_KEY) or the admin key (DSH_ADMIN_KEY) as the bearer token; with neither configured, 403.',
      responses: {
        200: { description: 'Prometheus text exposition', content: { 'text/plain': {} } },
        401: jsonResponse('No key, or a wrong one', ErrorBody),
        403: jsonResponse('No metrics or admin key configured', ErrorBody),
      },
    }),
    metricsAuth(options.keys),
    async (c) => c.text(await options.metrics.render(), 200, { 'Content-Type': options.metrics.contentType }),
  );
  return app;
};
