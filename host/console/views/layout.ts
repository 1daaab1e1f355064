// The page frame every console page shares, written with hono/jsx's `jsx()` (Node runs our
// TypeScript by stripping types, which leaves JSX syntax untransformed, so elements are built with
// the factory the syntax would compile to). hono/jsx escapes every text child and attribute value:
// untrusted text (file names, tool output, event payloads) is never markup here.
import { type Child, jsx } from 'hono/jsx';
import type { ConsoleSession } from '../sessions.ts';

export const h = jsx;
export type Node = ReturnType<typeof jsx>;

export interface PageOptions {
  title: string;
  /** Absent on the sign-in page, which shows no navigation. */
  session?: ConsoleSession;
  /** Module scripts under /console/assets/. */
  scripts?: string[];
  /** Stylesheets under /console/assets/ besides console.css. */
  styles?: string[];
  /**
   * The response's style nonce (guard.ts cspOf): the page loads assets/xterm-csp.js first, which
   * gives xterm.js's <style> elements this nonce.
   */
  styleNonce?: string;
}

/** A hidden field with the session's CSRF token, for every mutating form. */
export const csrfField = (session: ConsoleSession): Node =>
  h('input', { type: 'hidden', name: 'csrf', value: session.csrf });

const nav = (session: ConsoleSession): Node =>
  h(
    'header',
    { class: 'top' },
    h('a', { href: '/console', class: 'brand' }, 'dsh-sandbox console'),
    session.role === 'tenant'
      ? h(
          'nav',
          null,
          h('a', { href: '/console/agents' }, 'Agents'),
          h('a', { href: '/console/timeline' }, 'Timeline'),
        )
      : h('nav', null, h('a', { href: '/console/operator' }, 'Operator')),
    h(
      'form',
      { method: 'post', action: '/console/signout', class: 'signout' },
      csrfField(session),
      h('button', { type: 'submit' }, 'Sign out'),
    ),
  );

export const page = async (options: PageOptions, ...content: Child[]): Promise<string> => {
  const { session } = options;
  const doc = h(
    'html',
    { lang: 'en' },
    h(
      'head',
      null,
      h('meta', { charset: 'utf-8' }),
      h('meta', { name: 'viewport', content: 'width=device-width, initial-scale=1' }),
      session === undefined ? null : h('meta', { name: 'csrf-token', content: session.csrf }),
      h('title', null, `${options.title} · dsh-sandbox`),
      h('link', { rel: 'icon', href: '/favicon.ico' }),
      h('link', { rel: 'stylesheet', href: '/console/assets/console.css' }),
      ...(options.styles ?? []).map((s) => h('link', { rel: 'stylesheet', href: `/console/assets/${s}` })),
    ),
    h(
      'body',
      session === undefined ? { class: 'bare' } : null,
      session === undefined ? null : nav(session),
      h('main', null, h('h1', null, options.title), ...content),
      options.styleNonce === undefined
        ? null
        : h('script', {
            type: 'module',
            src: '/console/assets/xterm-csp.js',
            nonce: options.styleNonce,
            'data-style-nonce': '',
          }),
      ...(options.scripts ?? []).map((s) => h('script', { type: 'module', src: `/console/assets/${s}` })),
    ),
  );
  return `<!doctype html>${await doc.toString()}`;
};

export const table = (head: string[], rows: Node[]): Node =>
  h(
    'table',
    null,
    h('thead', null, h('tr', null, ...head.map((c) => h('th', null, c)))),
    h('tbody', null, ...rows),
  );

export const when = (at: number): string => new Date(at).toISOString().replace('T', ' ').slice(0, 19);
