// Signing in and out. A key is checked by asking the API with it (a tenant key: GET /v1/keys, whose
// first key names the tenant that owns the session; the admin key: GET /v1/tenants) — the console
// holds no key store of its own, and wrong keys count against the browser's address like any other
// (api/auth-throttle.ts). The key stays in the server-side session; the browser gets only the
// session's opaque id, in an httpOnly, SameSite=Strict cookie (Secure over https).
import { Hono } from 'hono';
import { type ApiFetch, apiRequest } from './api.ts';
import {
  type ConsoleEnv,
  checkCsrf,
  clearSessionCookie,
  requireSession,
  sameOrigin,
  sessionOf,
  setSessionCookie,
} from './guard.ts';
import type { SessionRole, Sessions } from './sessions.ts';
import { h, page } from './views/layout.ts';

const signinPage = (message?: string) =>
  page(
    { title: 'Sign in' },
    message === undefined ? null : h('p', { role: 'alert' }, message),
    h(
      'form',
      { method: 'post', action: '/console/signin' },
      h(
        'p',
        null,
        h(
          'label',
          null,
          'API key ',
          h('input', { type: 'password', name: 'key', required: true, autocomplete: 'off', size: 60 }),
        ),
      ),
      h(
        'p',
        null,
        h(
          'label',
          null,
          h('input', { type: 'radio', name: 'role', value: 'tenant', checked: true }),
          ' tenant key',
        ),
        ' ',
        h(
          'label',
          null,
          h('input', { type: 'radio', name: 'role', value: 'operator' }),
          ' admin key (operator view)',
        ),
      ),
      h('button', { type: 'submit' }, 'Sign in'),
    ),
  );

/** Whose session it is: the tenant its keys' page names (every tenant key lists its own), or the operator. */
const ownerOf = async (role: SessionRole, answer: Response): Promise<string> => {
  if (role === 'operator') return 'operator';
  const page = (await answer.json()) as { keys: { tenantId: string }[] };
  return `tenant:${page.keys[0]?.tenantId}`;
};

export const homeOf = (role: SessionRole): string =>
  role === 'tenant' ? '/console/agents' : '/console/operator';

export const signinRoutes = (fetch: ApiFetch, sessions: Sessions): Hono<ConsoleEnv> => {
  const app = new Hono<ConsoleEnv>();
  app.get('/console/signin', async (c) => {
    const session = sessionOf(sessions, c);
    if (session !== undefined) return c.redirect(homeOf(session.role), 303);
    return c.html(await signinPage());
  });
  app.post('/console/signin', async (c) => {
    // No session yet, so no token: a sign-in from another site (login CSRF) is refused by origin.
    if (!sameOrigin(c)) return c.text('This form was sent from another site.', 403);
    const form = await c.req.parseBody();
    const key = typeof form.key === 'string' ? form.key.trim() : '';
    const role: SessionRole = form.role === 'operator' ? 'operator' : 'tenant';
    const probe = role === 'tenant' ? '/v1/keys?limit=1' : '/v1/tenants';
    const answer = /^[A-Za-z0-9._~+/=-]{1,512}$/.test(key)
      ? await apiRequest(fetch, c, key, probe)
      : undefined;
    // The API throttles failed keys per address, the browser's included (its connection goes along).
    if (answer?.status === 429) {
      const retry = answer.headers.get('retry-after') ?? '60';
      return c.html(
        await signinPage(`Too many failed sign-ins from your address; try again in ${retry} seconds.`),
        429,
        { 'Retry-After': retry },
      );
    }
    if (answer?.ok !== true) return c.html(await signinPage('That key was not accepted.'), 401);
    // A session this browser already held ends: a sign-in always starts from a fresh id, and the
    // session it replaces does not live on unseen (with its streams) until it expires.
    const held = sessionOf(sessions, c);
    if (held !== undefined) sessions.close(held.id);
    const session = sessions.open(role, key, await ownerOf(role, answer));
    setSessionCookie(c, session);
    return c.redirect(homeOf(role), 303);
  });
  app.post('/console/signout', requireSession(sessions), async (c) => {
    await checkCsrf(c);
    sessions.close(c.get('session').id);
    clearSessionCookie(c);
    return c.redirect('/console/signin', 303);
  });
  app.get('/console', requireSession(sessions), (c) => c.redirect(homeOf(c.get('session').role), 303));
  return app;
};
