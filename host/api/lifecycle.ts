// Shutdown state shared by the app and the server: once `begin()` runs, new requests answer 503
// SHUTTING_DOWN, open SSE streams send a final `shutdown` event and end, and `signal` is aborted.
import type { MiddlewareHandler } from 'hono';
import { SandboxError } from '../errors.ts';

export interface Lifecycle {
  readonly signal: AbortSignal;
  readonly shuttingDown: boolean;
  begin(): void;
}

export const createLifecycle = (): Lifecycle => {
  const controller = new AbortController();
  return {
    signal: controller.signal,
    get shuttingDown() {
      return controller.signal.aborted;
    },
    begin: () => controller.abort(),
  };
};

export const refuseWhenShuttingDown = (lifecycle: Lifecycle): MiddlewareHandler =>
  async function refuseWhenShuttingDown(_c, next) {
    if (lifecycle.shuttingDown) {
      throw new SandboxError(
        'SHUTTING_DOWN',
        'The service is shutting down; retry against the restarted service.',
        { data: { retryAfterS: 5 } },
      );
    }
    await next();
  };
