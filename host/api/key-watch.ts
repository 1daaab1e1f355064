// Connections that stay open for as long as their client wants (an agent's event stream, an MCP
// client's notification stream, a terminal socket) outlive the check of the key that opened them: a
// key revoked (rotated out, leaked), expired, or of a tenant being deleted kept reading the live log,
// or typing into a shell. Such a connection asks again every KEY_RECHECK_MS whether its key is still
// good (the verifier's cache answers without a read until a revocation makes it forget the key) and
// ends when it is not. Call streams are left alone: they end with their batch, within the call
// deadline, and ending one would cancel the work under it.
import type { Context } from 'hono';
import type { ApiEnv } from './env.ts';

/** How often an open connection checks its key again (its cut-off after a revocation). */
export const KEY_RECHECK_MS = 1000;

/** Calls `refused` once, when the request's key is no longer accepted; the returned function stops watching. */
export function onKeyRefused(c: Context<ApiEnv>, refused: () => void): () => void {
  const keyLive = c.get('keyLive');
  if (keyLive === undefined) return () => {};
  let checking = false;
  const timer = setInterval(() => {
    if (checking) return;
    checking = true;
    keyLive()
      .then(
        (live) => {
          if (live) return;
          clearInterval(timer);
          refused();
        },
        () => undefined, // the store could not answer: asked again at the next tick
      )
      .finally(() => {
        checking = false;
      });
  }, KEY_RECHECK_MS);
  timer.unref();
  return () => clearInterval(timer);
}
