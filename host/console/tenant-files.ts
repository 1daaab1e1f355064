// The tenant's file and terminal pages (mounted by ./tenant.ts): a directory or file of an agent's
// sandbox, a file's download, and a terminal page with its WebSocket, the public route's own
// upgrade carrying the session's key as its bearer.
// Invariants: a file is shown inline only up to VIEW_BYTES and never when binary; the socket is
// refused when opened from another site (cookies travel with cross-site WebSockets) and ends with
// the session, not the tab.
import { Hono } from 'hono';
import { type ApiFetch, apiJson, apiRequest, failureOf } from './api.ts';
import { type ConsoleEnv, endSocketOn, newNonce, sameOrigin, sessionEnd } from './guard.ts';
import { agentPath, downloadName, key } from './tenant-agents.ts';
import type { AgentView } from './views/agents.ts';
import { type DirEntryView, directoryView, fileView } from './views/files.ts';
import { h, page } from './views/layout.ts';

/** A file the console uploads at most this large (larger ones: PUT /v1/agents/:id/files). */
export const UPLOAD_BYTES = 16 * 1024 * 1024;

/** A file shown inline at most this large; larger ones are offered as a download. */
const VIEW_BYTES = 256 * 1024;

/** GET /console/agents/:id/files (and its download), its terminal page and the terminal's socket. */
export const filePages = (fetch: ApiFetch): Hono<ConsoleEnv> => {
  const app = new Hono<ConsoleEnv>();
  app.get('/console/agents/:id/files', async (c) => {
    const id = c.req.param('id');
    const path = c.req.query('path') || '.';
    const session = c.get('session');
    const title = `Files of ${id}`;
    const listing = await apiRequest(
      fetch,
      c,
      key(c),
      `${agentPath(id)}/directory?path=${encodeURIComponent(path)}`,
    );
    if (listing.ok) {
      const { entries, truncated } = (await listing.json()) as {
        entries: DirEntryView[];
        truncated: boolean;
      };
      return c.html(
        await page({ title, session }, ...directoryView(session, id, path, entries, truncated, UPLOAD_BYTES)),
      );
    }
    await listing.body?.cancel();
    // Not a directory (or not there): read it as a file, whose failure then says what is wrong.
    const file = await apiRequest(
      fetch,
      c,
      key(c),
      `${agentPath(id)}/files?path=${encodeURIComponent(path)}`,
    );
    if (!file.ok) throw await failureOf(file);
    const size = Number(file.headers.get('content-length') ?? 0);
    let text: string | undefined;
    if (size <= VIEW_BYTES) {
      const bytes = new Uint8Array(await file.arrayBuffer());
      text = bytes.includes(0) ? undefined : new TextDecoder().decode(bytes);
    } else await file.body?.cancel();
    return c.html(await page({ title, session }, ...fileView(session, id, path, text, size)));
  });

  app.get('/console/agents/:id/files/download', async (c) => {
    const path = c.req.query('path') ?? '';
    const res = await apiRequest(
      fetch,
      c,
      key(c),
      `${agentPath(c.req.param('id'))}/files?path=${encodeURIComponent(path)}`,
    );
    if (!res.ok) throw await failureOf(res);
    return c.body(res.body as ReadableStream, 200, {
      'Content-Type': 'application/octet-stream',
      'Content-Disposition': `attachment; filename="${downloadName(path)}"`,
      ...(res.headers.has('content-length')
        ? { 'Content-Length': res.headers.get('content-length') as string }
        : {}),
    });
  });

  app.get('/console/agents/:id/terminal', async (c) => {
    const id = c.req.param('id');
    const tid = c.req.query('tid') ?? '';
    await apiJson<AgentView>(fetch, c, key(c), agentPath(id));
    // xterm.js writes its theme, cell metrics and cursor as <style> elements: this response's CSP
    // admits those that carry its nonce (assets/xterm-csp.js gives it to them).
    const styleNonce = newNonce();
    c.set('styleNonce', styleNonce);
    const socket = `/console/agents/${encodeURIComponent(id)}/terminals/${encodeURIComponent(tid)}/socket`;
    return c.html(
      await page(
        {
          title: `Terminal ${tid} of ${id}`,
          session: c.get('session'),
          scripts: ['terminal.js'],
          styles: ['xterm.css'],
          styleNonce,
        },
        h('div', { id: 'terminal', 'data-socket': socket }),
        h('p', { id: 'terminal-state', class: 'muted' }, 'connecting…'),
      ),
    );
  });

  // The terminal's WebSocket: the public route's own upgrade, with the session's key as its
  // bearer. Cookies travel with cross-site WebSockets, so the origin is checked first.
  app.get('/console/agents/:id/terminals/:tid/socket', async (c) => {
    if (!sameOrigin(c)) return c.text('This socket was opened from another site.', 403);
    const url = new URL(c.req.url);
    const headers = new Headers();
    for (const name of [
      'upgrade',
      'connection',
      'sec-websocket-key',
      'sec-websocket-version',
      'sec-websocket-protocol',
      'sec-websocket-extensions',
    ]) {
      const value = c.req.header(name);
      if (value !== undefined) headers.set(name, value);
    }
    const path = `${agentPath(c.req.param('id'))}/terminals/${encodeURIComponent(c.req.param('tid'))}${url.search}`;
    // Like the event stream, the socket ends with the session (sign-out, expiry), not the tab.
    endSocketOn(c.env, sessionEnd(c.get('session')));
    return apiRequest(fetch, c, key(c), path, { headers });
  });
  return app;
};
