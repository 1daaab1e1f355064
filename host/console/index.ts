// The console under /console: server-rendered pages (hono/jsx) over the public v1 API, signed in
// with a tenant key (or the admin key, for the operator view). Mount with
// `app.route('/', consoleRoutes({ fetch: (r, env) => app.fetch(r, env) }))`.
// Invariants: every response under /console carries the security headers (guard.ts); only the
// sign-in page, its stylesheet and the icon answer without a session; the console reads and
// changes nothing but through v1.
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { ApiFailure, type ApiFetch } from './api.ts';
import { assetOf, PUBLIC_ASSETS } from './assets.ts';
import { favicon } from './favicon.ts';
import {
  type ConsoleEnv,
  CsrfRefusal,
  clearSessionCookie,
  refuseForeignRequests,
  requireSession,
  securityHeaders,
} from './guard.ts';
import { operatorRoutes } from './operator.ts';
import { createSessions, type Sessions } from './sessions.ts';
import { signinRoutes } from './signin.ts';
import { tenantRoutes } from './tenant.ts';
import { UPLOAD_BYTES } from './tenant-files.ts';
import { timelineRoutes } from './timeline.ts';
import { h, page } from './views/layout.ts';

export interface ConsoleOptions {
  /** The control plane's own fetch: every console request to the API goes through it. */
  fetch: ApiFetch;
  /** Default: sessions in memory, 8 hours each. */
  sessions?: Sessions;
  /** Bytes of event pages one timeline poll reads before it starts no more. Default 2 MiB. */
  timelinePollBytes?: number;
}

/** A sign-in form is a key (512 characters at most) and a role. */
const SIGNIN_BYTES = 8 * 1024;
/** Any other form: an answer's JSON (the API takes 1 MiB of it) with its form encoding. */
const FORM_BYTES = 2 * 1024 * 1024;

/** The one form that carries a file: bounded by the file's limit (and its form fields). */
const UPLOAD_PATH = /^\/console\/agents\/[^/]+\/files\/upload$/;

/**
 * Bounds a request body before anything parses it: /console is outside the API's body limit, and
 * the sign-in form is parsed with no session, so without this anyone could make it buffer gigabytes.
 */
const formLimit = (maxSize: number) =>
  bodyLimit({ maxSize, onError: (c) => c.text('The form is larger than the console takes.', 413) });

export const consoleRoutes = (options: ConsoleOptions): Hono<ConsoleEnv> => {
  const sessions = options.sessions ?? createSessions();
  const app = new Hono<ConsoleEnv>();
  app.use('/favicon.ico', securityHeaders);
  app.use('/console', securityHeaders);
  app.use('/console/*', securityHeaders);
  app.use('/console', refuseForeignRequests);
  app.use('/console/*', refuseForeignRequests);
  app.use('/console/signin', formLimit(SIGNIN_BYTES));
  const forms = formLimit(FORM_BYTES);
  const uploads = formLimit(UPLOAD_BYTES + FORM_BYTES);
  app.use('/console/*', (c, next) => (UPLOAD_PATH.test(c.req.path) ? uploads(c, next) : forms(c, next)));
  app.onError(async (error, c) => {
    if (error instanceof CsrfRefusal) return c.text(error.message, 403);
    if (error instanceof ApiFailure) {
      if (error.status === 401) {
        // The key was revoked meanwhile: the session is over.
        const session = c.get('session');
        if (session !== undefined) sessions.close(session.id);
        clearSessionCookie(c);
        return c.redirect('/console/signin', 303);
      }
      const status =
        error.status === 404 || error.status === 400 || error.status === 409 ? error.status : 502;
      return c.html(
        await page(
          { title: error.status === 404 ? 'Not found' : 'Refused', session: c.get('session') },
          h('p', { role: 'alert' }, `${error.code}: ${error.message}`),
          h('p', null, h('a', { href: '/console' }, 'Back to the console')),
        ),
        status,
      );
    }
    console.error('console:', error);
    return c.text('The console failed to answer; see the service log.', 500);
  });
  app.route('/', signinRoutes(options.fetch, sessions));
  app.route('/', tenantRoutes(options.fetch, sessions));
  app.route('/', timelineRoutes(options.fetch, sessions, options.timelinePollBytes));
  app.route('/', operatorRoutes(options.fetch, sessions));
  // The icon browsers ask every origin for, and the pages link to.
  app.get('/favicon.ico', (c) =>
    c.body(favicon() as Uint8Array<ArrayBuffer>, 200, {
      'Content-Type': 'image/x-icon',
      'Cache-Control': 'public, max-age=86400',
    }),
  );
  const assetGate = requireSession(sessions);
  app.get('/console/assets/:name', async (c, next) => {
    // The sign-in page's stylesheet is public (it holds nothing of anybody's); the rest needs a session.
    if (PUBLIC_ASSETS.has(c.req.param('name'))) return next();
    return assetGate(c, next);
  });
  app.get('/console/assets/:name', (c) => {
    const asset = assetOf(c.req.param('name'));
    if (asset === undefined) return c.text('No such asset.', 404);
    return c.body(asset.body as Uint8Array<ArrayBuffer>, 200, {
      'Content-Type': asset.type,
      'Cache-Control': 'private, max-age=300',
    });
  });
  app.all('/console/*', requireSession(sessions), async (c) =>
    c.html(
      await page({ title: 'Not found', session: c.get('session') }, h('p', null, 'No such console page.')),
      404,
    ),
  );
  return app;
};
