// The tenant's pages: agents, one agent (requests, timeline), its event stream and export, answers
// to host requests, files, and terminals. Every read and write is a v1 request with the session's
// key (api.ts), so another tenant's agent is the API's 404 here too.
import { Hono } from 'hono';
import { type ApiFetch, apiJson, apiPost, apiRequest, failureOf } from './api.ts';
import {
  type ConsoleEnv,
  checkCsrf,
  endBodyOn,
  endSocketOn,
  requireSession,
  sameOrigin,
  sessionEnd,
} from './guard.ts';
import type { Sessions } from './sessions.ts';
import { agentPage, type UsageView } from './views/agent.ts';
import { type AgentView, agentsTable } from './views/agents.ts';
import { type DirEntryView, directoryView, fileView } from './views/files.ts';
import { h, page } from './views/layout.ts';
import { answerOf, type RequestView } from './views/requests.ts';

/** A file shown inline at most this large; larger ones are offered as a download. */
const VIEW_BYTES = 256 * 1024;

interface EventView {
  seq: number;
  type: string;
  surface: string;
  callId?: string;
  parentCallId?: string;
}

/** What the export's query asks to keep (the same filters as the page's). */
const eventFilter = (q: Record<string, string>) => (e: EventView) =>
  (!q.family || e.type.split('.')[0] === q.family) &&
  (!q.surface || e.surface === q.surface) &&
  (!q.call || e.callId === q.call || e.parentCallId === q.call);

/** A download name with nothing that could break out of the header's quoted string. */
const downloadName = (path: string): string =>
  (path.split('/').pop() || 'file').replace(/[^A-Za-z0-9._-]/g, '_');

export const tenantRoutes = (fetch: ApiFetch, sessions: Sessions): Hono<ConsoleEnv> => {
  const app = new Hono<ConsoleEnv>();
  app.use('/console/agents', requireSession(sessions, 'tenant'));
  app.use('/console/agents/*', requireSession(sessions, 'tenant'));
  const key = (c: { get(k: 'session'): { key: string } }) => c.get('session').key;
  const agentPath = (id: string) => `/v1/agents/${encodeURIComponent(id)}`;

  app.get('/console/agents', async (c) => {
    const { agents } = await apiJson<{ agents: AgentView[] }>(fetch, c, key(c), '/v1/agents');
    return c.html(await page({ title: 'Agents', session: c.get('session') }, agentsTable(agents)));
  });

  app.get('/console/agents/:id', async (c) => {
    const id = c.req.param('id');
    const agent = await apiJson<AgentView>(fetch, c, key(c), agentPath(id));
    const { requests } = await apiJson<{ requests: RequestView[] }>(
      fetch,
      c,
      key(c),
      `${agentPath(id)}/requests?state=pending`,
    );
    const usage = await apiJson<UsageView>(fetch, c, key(c), `${agentPath(id)}/usage`);
    const session = c.get('session');
    return c.html(
      await page(
        { title: `Agent ${agent.id}`, session, scripts: ['timeline.js'] },
        ...agentPage(agent, requests, session, usage),
      ),
    );
  });

  // The agent's live log as SSE, resumed from Last-Event-ID: the v1 stream itself, ended when the
  // session ends (sign-out, expiry) rather than when the tab is closed.
  app.get('/console/agents/:id/events/stream', async (c) => {
    const lastId = c.req.header('last-event-id');
    const res = await apiRequest(fetch, c, key(c), `${agentPath(c.req.param('id'))}/events`, {
      headers: { accept: 'text/event-stream', ...(lastId === undefined ? {} : { 'last-event-id': lastId }) },
    });
    if (!res.ok) throw await failureOf(res);
    return endBodyOn(res, sessionEnd(c.get('session')));
  });

  // The whole log (or what the filters keep) as NDJSON, read page by page.
  app.get('/console/agents/:id/events.ndjson', async (c) => {
    const id = c.req.param('id');
    const keep = eventFilter(c.req.query());
    const first = await apiJson<{ events: EventView[]; next: number }>(
      fetch,
      c,
      key(c),
      `${agentPath(id)}/events?limit=1000`,
    );
    const encoder = new TextEncoder();
    let pageOf: { events: EventView[]; next: number } | undefined = first;
    // One page per pull: a slow download holds one page in memory, never the whole log.
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        while (pageOf !== undefined) {
          const current = pageOf;
          pageOf =
            current.events.length === 0
              ? undefined
              : await apiJson(fetch, c, key(c), `${agentPath(id)}/events?limit=1000&after=${current.next}`);
          const lines = current.events.filter(keep).map((e) => `${JSON.stringify(e)}\n`);
          if (lines.length > 0) return controller.enqueue(encoder.encode(lines.join('')));
        }
        controller.close();
      },
    });
    return c.body(body, 200, {
      'Content-Type': 'application/x-ndjson',
      'Content-Disposition': `attachment; filename="${downloadName(id)}-events.ndjson"`,
    });
  });

  app.post('/console/agents/:id/requests/:rid', async (c) => {
    const form = await checkCsrf(c);
    const id = c.req.param('id');
    const kind = typeof form.kind === 'string' ? form.kind : '';
    await apiPost(
      fetch,
      c,
      key(c),
      `${agentPath(id)}/requests/${encodeURIComponent(c.req.param('rid'))}`,
      answerOf(kind, form),
    );
    return c.redirect(`/console/agents/${encodeURIComponent(id)}`, 303);
  });

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
      return c.html(await page({ title, session }, ...directoryView(id, path, entries, truncated)));
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
    return c.html(await page({ title, session }, ...fileView(id, path, text, size)));
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
    const socket = `/console/agents/${encodeURIComponent(id)}/terminals/${encodeURIComponent(tid)}/socket`;
    return c.html(
      await page(
        {
          title: `Terminal ${tid} of ${id}`,
          session: c.get('session'),
          scripts: ['terminal.js'],
          styles: ['xterm.css'],
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
