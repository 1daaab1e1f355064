// The console's gate: security headers on every console response, the session cookie, and CSRF.
// Invariants: every response under /console carries the strict CSP (no inline script, nothing
// framed) whatever answered it, errors and redirects included; inline style only on a page that
// set a fresh nonce for it (the terminal page, for xterm.js's own <style> elements); no page,
// asset or socket but the sign-in page, its stylesheet and the icon answers without a live session; a mutating request passes only when it comes from
// this origin (Origin / Sec-Fetch-Site) and, once signed in, carries the session's CSRF token.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Context, MiddlewareHandler } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { ConsoleSession, Sessions } from './sessions.ts';

export interface ConsoleEnv {
  /** `styleNonce`: set by a page whose <style> elements carry it (see cspOf). */
  Variables: { session: ConsoleSession; styleNonce?: string };
}

export const COOKIE = 'dsh_console';

/**
 * Scripts, styles, sockets and images only from this origin; nothing inline, no framing. With a
 * `styleNonce`, <style> elements carrying that nonce too (never style attributes, never scripts).
 */
export const cspOf = (styleNonce?: string): string =>
  [
    "default-src 'self'",
    "script-src 'self'",
    styleNonce === undefined ? "style-src 'self'" : `style-src 'self' 'nonce-${styleNonce}'`,
    "img-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');

/** The policy of every console response that set no nonce. */
export const CSP = cspOf();

/** A fresh nonce for one response's inline styles (128 bits). */
export const newNonce = (): string => randomBytes(16).toString('base64url');

export const securityHeaders: MiddlewareHandler<ConsoleEnv> = async function consoleHeaders(c, next) {
  await next();
  const headers = c.res.headers;
  // A WebSocket's 101 comes back as a response without writable headers: nothing to add there.
  if (c.res.status === 101) return;
  try {
    headers.set('Content-Security-Policy', cspOf(c.get('styleNonce')));
    headers.set('X-Content-Type-Options', 'nosniff');
    // same-origin, not no-referrer: under no-referrer a browser sends `Origin: null` with forms,
    // which the CSRF check could not tell from a forged post.
    headers.set('Referrer-Policy', 'same-origin');
    headers.set('X-Frame-Options', 'DENY');
    headers.set('Cross-Origin-Opener-Policy', 'same-origin');
    if (!headers.has('Cache-Control')) headers.set('Cache-Control', 'no-store');
  } catch {
    // An immutable response (a proxied one): copy it so that its headers can be set.
    c.res = new Response(c.res.body, c.res);
    return consoleHeaders(c, async () => {});
  }
};

/**
 * Fetch Metadata: of requests that another site's page made, only a top-level navigation (a link
 * followed) is answered; an <img>, <script>, EventSource, fetch or frame from there is refused
 * before anything is read. SameSite=Strict keeps the cookie off cross-site requests, but a page of
 * the same site on another port (http://localhost:8080 next to http://localhost:7070) gets it, and
 * could otherwise hold the tenant's request slots with event streams or timeline polls.
 */
export const refuseForeignRequests: MiddlewareHandler = async function refuseForeignRequests(c, next) {
  const site = c.req.header('sec-fetch-site');
  if (site === 'cross-site' || site === 'same-site') {
    const dest = c.req.header('sec-fetch-dest');
    const link =
      c.req.method === 'GET' &&
      c.req.header('sec-fetch-mode') === 'navigate' &&
      (dest === undefined || dest === 'document');
    if (!link) return c.text('This request was made by a page of another site.', 403);
  }
  await next();
};

const isHttps = (c: Context): boolean => new URL(c.req.url).protocol === 'https:';

export const setSessionCookie = (c: Context, session: ConsoleSession): void => {
  setCookie(c, COOKIE, session.id, {
    path: '/console',
    httpOnly: true,
    sameSite: 'Strict',
    secure: isHttps(c),
    maxAge: Math.max(1, Math.floor((session.expiresAt - Date.now()) / 1000)),
  });
};

export const clearSessionCookie = (c: Context): void => {
  deleteCookie(c, COOKIE, { path: '/console', secure: isHttps(c) });
};

/** The live session behind the request's cookie, or undefined. */
export const sessionOf = (sessions: Sessions, c: Context): ConsoleSession | undefined =>
  sessions.get(getCookie(c, COOKIE));

/**
 * Admits only requests with a live session of `role`. Without one, a page or asset GET is sent to
 * the sign-in page and anything else is refused; nothing of what it asked for is answered.
 */
export const requireSession = (
  sessions: Sessions,
  role?: ConsoleSession['role'],
): MiddlewareHandler<ConsoleEnv> =>
  async function requireSession(c, next) {
    const session = sessionOf(sessions, c);
    if (session === undefined || (role !== undefined && session.role !== role)) {
      if (c.req.method === 'GET' && c.req.header('upgrade') === undefined)
        return c.redirect('/console/signin', 303);
      return c.text('Sign in to the console first.', 401);
    }
    c.set('session', session);
    await next();
  };

/**
 * Aborts when the session ends (sign-out, eviction) or expires: what stays open, an event stream,
 * must not outlive the session that was checked when it opened.
 */
export const sessionEnd = (session: ConsoleSession): AbortSignal =>
  AbortSignal.any([session.ended, AbortSignal.timeout(Math.max(0, session.expiresAt - Date.now()))]);

/** What the console needs of the API's WebSocket server (ws's) and its sockets: no import of it here. */
interface WebSocket {
  close(code: number, reason: string): void;
}
interface WebSocketServer {
  on(event: 'connection', listener: (ws: WebSocket, request: IncomingMessage) => void): unknown;
}

/** Each WebSocket server's sockets by the upgrade request they came from (one listener per server). */
const socketsByRequest = new WeakMap<WebSocketServer, WeakMap<IncomingMessage, WebSocket>>();

const socketsOf = (wss: WebSocketServer): WeakMap<IncomingMessage, WebSocket> => {
  let sockets = socketsByRequest.get(wss);
  if (sockets === undefined) {
    const map = new WeakMap<IncomingMessage, WebSocket>();
    sockets = map;
    socketsByRequest.set(wss, map);
    wss.on('connection', (ws: WebSocket, request: IncomingMessage) => map.set(request, ws));
  }
  return sockets;
};

/**
 * Ends the WebSocket an upgrade request (`env`, as @hono/node-server passes it) becomes when
 * `signal` aborts: a close frame (1008, "console session ended") once upgraded, the connection
 * dropped before. A terminal attached from the console must not outlive its session.
 */
export const endSocketOn = (env: unknown, signal: AbortSignal): void => {
  const { incoming, wss } = (env ?? {}) as { incoming?: IncomingMessage; wss?: WebSocketServer };
  if (incoming === undefined) return;
  const sockets = wss === undefined ? undefined : socketsOf(wss);
  const end = (): void => {
    const ws = sockets?.get(incoming);
    if (ws !== undefined) ws.close(1008, 'console session ended');
    else incoming.socket.destroy();
  };
  if (signal.aborted) {
    end();
    return;
  }
  signal.addEventListener('abort', end, { once: true });
  incoming.socket.once('close', () => signal.removeEventListener('abort', end));
};

/**
 * `res` with its body ended when `signal` aborts: the body's source is cancelled (as when the
 * browser goes away, so the API's stream ends and frees its slot) and the browser's copy closes.
 */
export const endBodyOn = (res: Response, signal: AbortSignal): Response => {
  if (res.body === null) return res;
  const reader = res.body.getReader();
  let ended = false;
  const end = (controller: ReadableStreamDefaultController<Uint8Array>) => {
    if (ended) return;
    ended = true;
    signal.removeEventListener('abort', onAbort);
    reader.cancel().catch(() => undefined);
    controller.close();
  };
  let onAbort = () => {};
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      onAbort = () => end(controller);
      if (signal.aborted) end(controller);
      else signal.addEventListener('abort', onAbort, { once: true });
    },
    async pull(controller) {
      const { done, value } = await reader.read();
      if (ended) return;
      if (done) end(controller);
      else controller.enqueue(value);
    },
    cancel(reason) {
      ended = true;
      signal.removeEventListener('abort', onAbort);
      return reader.cancel(reason);
    },
  });
  return new Response(body, res);
};

/** True when a browser says the request comes from this very origin (non-browsers say nothing). */
export const sameOrigin = (c: Context): boolean => {
  const site = c.req.header('sec-fetch-site');
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return false;
  const origin = c.req.header('origin');
  return origin === undefined || origin === new URL(c.req.url).origin;
};

const equal = (a: string, b: string): boolean => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** Refuses a mutating request from another site, or one without the session's CSRF token. */
export const checkCsrf = async (
  c: Context<ConsoleEnv>,
): Promise<Record<string, string | File | (string | File)[]>> => {
  if (!sameOrigin(c)) throw new CsrfRefusal('This form was sent from another site.');
  // Parsed once, keeping repeated fields (a multiple-choice question's picks); a repeated token fails.
  const form = await c.req.parseBody({ all: true });
  const sent = form.csrf;
  if (typeof sent !== 'string' || !equal(sent, c.get('session').csrf))
    throw new CsrfRefusal('The form is stale or forged: reload the page and send it again.');
  return form;
};

export class CsrfRefusal extends Error {
  override name = 'CsrfRefusal';
}
